"""The msdoctor subcommands, one module each, imported lazily by msdoctor.cli."""
