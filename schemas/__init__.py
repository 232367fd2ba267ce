"""JSON Schemas generated from kvswitch's models, shipped as the package ``kvswitch.schemas``."""
