"""Compatibility data (TOML, one file per relationship); every row carries its source."""
