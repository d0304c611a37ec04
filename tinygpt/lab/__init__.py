"""The lab: each classic failure as runs that differ in one setting and a verdict computed from them (`pitfalls/`,
one module each, listed in `registry`), the model's health checks, and the induction-head experiment."""
