"""Helpers shared by the test tiers (notebook runs, clean environments, browser pages)."""
