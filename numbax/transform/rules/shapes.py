"""Shape manipulation: each is linear, so its JVP applies it to the tangent and its VJP
applies its adjoint (the inverse rearrangement, or a sum over repeated elements)."""
