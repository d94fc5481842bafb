"""The zoo's torch modules: our own code reproducing torchvision's and Hugging Face's architectures layer for
layer (same shapes, same parameter names), so that roofline needs neither library. Importing anything
here imports torch; roofline.workload.zoo imports these lazily, from build_module only."""
