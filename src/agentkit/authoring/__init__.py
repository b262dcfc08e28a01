"""The authoring API: the `define_*` functions and the values they return."""
