"""Build the example service into a bento with the Python API. From the project root:

python snippets/build_bento.py
"""

from __future__ import annotations

import runnerkit.bentos

if __name__ == "__main__":
    bento = runnerkit.bentos.build(
        "services/digits.py:svc",
        include=["/services/*.py", "/samples/*.png"],
        exclude=["__pycache__/", "/.venv/"],
        python={"packages": ["numpy", "pillow", "onnxruntime"]},
        docker={"base_image": "nvcr.io/nvidia/tritonserver:25.11-py3"},
    )
    print(f"Successfully built {bento}")
