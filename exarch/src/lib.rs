//! exarch: an LLM coding agent whose one tool is a ral turn (issue 7).
//! Nothing is implemented yet.
