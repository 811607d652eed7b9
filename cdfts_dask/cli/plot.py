"""placeholder"""


def register(sub) -> None:
    pass
