"""Workloads as op lists: llm/ holds decoder-only language models' prefill and decode phases."""
