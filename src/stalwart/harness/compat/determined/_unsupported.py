"""A clear ImportError for the parts of Determined's API that Stalwart does not implement."""


def refuse(module: str, instead: str) -> None:
    raise ImportError(
        f"{module} is not implemented by Stalwart (which runs Determined's PyTorch and Core API code); {instead}"
    )
