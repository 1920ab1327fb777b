"""msdoctor's documentation, installed as ``msdoctor.docs`` (pyproject.toml package-dir), so that the files
messages point at (``msdoctor.shipped.path``) exist in a wheel install as well as in a clone."""
