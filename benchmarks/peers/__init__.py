"""Minimal textbook schedulers, written only to compare the engine against."""
