"""Decoder-only language models: configs (built-in and Hugging Face config.json) and their two phases."""
