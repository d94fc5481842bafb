"""Advice composed from predictions: serving concurrency and precision for language models."""
