"""Adversarial attacks for robustness evaluation: L2 and L_inf projected gradient descent.

::

    from sharpness.attacks import pgd_attack, robust_accuracy
    x_adv = pgd_attack(model, x, y, norm="linf", eps=8 / 255, steps=10)
    acc = robust_accuracy(model, x, y, norm="l2", eps=0.5, steps=10)

Images are raw ``[0, 1]`` tensors (the models of :mod:`sharpness.train` normalise inside), so
the radius is in pixel units, as in the robustness literature and torchattacks.
"""

from sharpness.attacks.pgd import NORMS, pgd_attack, robust_accuracy

__all__ = ["NORMS", "pgd_attack", "robust_accuracy"]
