"""What a profile or a plan needs on disk (``sharpness data bundle``'s list): the data sets its
runs read, built stand-ins replaced by their sources, and the weights its pretrained models load."""

from __future__ import annotations

import json

from sharpness.planning.offline import needs_of, planned_jobs


def test_a_plan_needs_the_data_and_weights_of_its_targets_runs_only(tmp_path, repo):
    paper = str(repo / "workflow" / "config" / "paper.yaml")
    plan = tmp_path / "plan.yaml"
    plan.write_text("data: {download: false}\n")
    plan.with_suffix(".json").write_text(json.dumps(
        {"configfiles": [paper], "targets": ["figures/lesam/table_transfer.csv"]}))
    needs = needs_of(planned_jobs([], plan))
    # ViT-B/16 fine-tuned on CIFAR-10/100; the preflight's step reads the committed subset
    assert needs.datasets == ("cifar10", "cifar100", "cifar10_embedded")
    assert needs.weights == ("ViT_B_16_Weights.IMAGENET1K_V1",)
    whole = needs_of(planned_jobs([paper]), preflight=False)
    assert {"imagenet", "pacs", "vlcs", "mnist"} <= set(whole.datasets)
    assert "cifar10_embedded" not in whole.datasets
    assert whole.weights == ("ResNet50_Weights.IMAGENET1K_V1", "ViT_B_16_Weights.IMAGENET1K_V1")


def test_a_built_stand_in_needs_the_sets_it_is_built_from(repo):
    quick = str(repo / "workflow" / "config" / "quick.yaml")
    jobs = planned_jobs([quick])
    assert "mnist_on_cifar" in {j.dataset for j in jobs}  # the Grad-CAM SVHN stand-in
    needs = needs_of(jobs)
    assert needs.datasets == ("cifar10_embedded", "mnist_embedded") and needs.weights == ()
