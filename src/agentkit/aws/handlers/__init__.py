"""Lambda entry points, one module per function of template.yaml."""
