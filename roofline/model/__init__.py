"""Cost composition beyond one op: the LLM serving step (prefill, decode, KV cache, runtime)."""
