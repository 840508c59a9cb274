"""Renderers: pure functions of a Profile."""
