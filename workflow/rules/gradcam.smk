# Paper `minorfirst`, real images: GD vs SAM attention with Grad-CAM (catalog item `gradcam`).
