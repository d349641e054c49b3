"""Build a container image of a bento (default: the newest `digits`). Build the bento first:

    python snippets/build_bento.py
    python snippets/containerize_bento.py                  # docker SDK (DOCKER_HOST), NGC base image
    python snippets/containerize_bento.py --backend podman \\
        --base-image localhost/runnerkit-tritonserver-cpu:2.51.0   # podman, the local CPU stand-in

Then serve it as in BentoML's Triton guide:

    docker run --rm -p 3000:3000 digits:<version> serve --production \\
        --triton-options model-control-mode=explicit --triton-options load-model=digits_onnx
"""

from __future__ import annotations

import argparse

import runnerkit.bentos

if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("tag", nargs="?", default="digits:latest")
    parser.add_argument("--backend", choices=("docker", "podman"), default="docker")
    parser.add_argument("--base-image", help="instead of the bento's docker.base_image")
    parser.add_argument("-t", "--image-tag", help="default: NAME:VERSION of the bento")
    args = parser.parse_args()

    image = runnerkit.bentos.containerize(
        args.tag,
        backend=args.backend,
        base_image=args.base_image,
        image_tag=args.image_tag,
        on_log=lambda line: print(line, flush=True),
    )
    print(f"Successfully built image {image.tag} ({image.image_id[:19]}) from {image.bento}")
