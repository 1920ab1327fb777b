"""Facts about the target and the machine, each a FactSpec computed lazily by the Context."""
