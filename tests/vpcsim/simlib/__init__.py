"""vpcsim internals: EC2 model, HTTP front ends, data plane (see ../README.md)."""
