"""What runs: a model or one op as a list of ops with their FLOPs and bytes (plain data, no device in sight).

Holds the op IR (`ops/`), the zoo's builders (`zoo/`), the torch tracer and its op map (`trace`,
`trace_map`), `--op` specs (`opspec`), precisions (`precision`) and the `--model`/`--op` request that picks
one of them (`request`). May import: errors, units. Never hardware, model or anything above.
"""
