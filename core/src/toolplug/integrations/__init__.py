"""Native integrations with agent frameworks: one module each, imported only when asked for."""
