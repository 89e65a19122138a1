//! End-to-end and corpus tests live in `tests/tests/`; data in `tests/syntax/`.
