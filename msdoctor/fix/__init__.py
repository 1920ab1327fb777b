"""Fixers: each builds a plan first (shown, dry-runnable), then applies it."""
