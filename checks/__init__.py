"""Built-in checks (installed as msdoctor.checks), registered through the msdoctor.checks entry-point group."""
