//! AST printer for `ralc --dump-ast` (being written).
