"""pinn: physics-informed neural networks in JAX."""
