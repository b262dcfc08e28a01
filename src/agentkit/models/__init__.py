"""Model providers behind one streaming port, resolved from `provider:model` ids."""
