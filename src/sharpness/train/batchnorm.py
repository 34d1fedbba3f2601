"""BatchNorm kept in eval mode during training (``freeze_bn: true``), as DomainBed's ResNet.

DomainBed (facebookresearch/DomainBed ``domainbed/networks.py``) overrides ``ResNet.train()``
to call ``freeze_bn()``, which puts every ``BatchNorm2d`` of the ImageNet-pretrained backbone
in eval mode: training normalises with the pre-trained running statistics and never updates
them, while the affine weights still train (unconditionally before its ERM++ release, an
``hparams["freeze_bn"]`` switch since). A pre-forward hook does the same here whatever
``train()`` / ``eval()`` calls the engine and the optimizers make between passes.
"""

from __future__ import annotations

from torch import nn

#: the layers frozen: every BatchNorm flavour torch has
BATCHNORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.SyncBatchNorm)


def _keep_eval(module: nn.Module, inputs: object) -> None:
    module.train(False)


def freeze_batchnorm(net: nn.Module) -> int:
    """Keep every BatchNorm layer of ``net`` in eval mode for each forward pass (running
    statistics used, never updated; its weight and bias still train). Returns how many."""
    layers = [m for m in net.modules() if isinstance(m, BATCHNORMS)]
    for m in layers:
        m.register_forward_pre_hook(_keep_eval)
        m.train(False)
    return len(layers)
