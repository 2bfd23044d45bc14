"""autograd's ``autograd.misc`` names: ``optimizers`` (``sgd``, ``rmsprop``, ``adam``
taking a gradient function and running the loop themselves)."""
