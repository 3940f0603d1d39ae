"""Name mappings: how the entry names of a file become module paths.

Contract: a :data:`Rename` is a mapping from file names to module paths (a path of ``None``
drops the entry) or a callable doing the same; :func:`check_rename` refuses anything else by
name before a file is opened, and :func:`renamed` applies one (:func:`renaming` also keeps
each entry's file name, for messages), refusing a mapping that sends
two entries to one path or turns a name into a non-string. Every refusal is a
:class:`~topos.CheckpointError`. :mod:`topos.checkpoint` reads Hugging Face names through it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from topos import CheckpointError, Tensor, ToposError

__all__ = ["Rename", "check_rename", "renamed", "renaming", "shown"]

Rename = Mapping[str, str | None] | Callable[[str], str | None]
"""How file entry names become module paths; ``None`` drops an entry (e.g. a cached mask)."""


def shown(value: object, limit: int = 60) -> str:
    """A repr short enough for a message, whatever a crafted header holds.

    Example:
        >>> shown("x" * 100, limit=10)
        "'xxxxxx..."
    """
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_rename(rename: object) -> None:
    """Refuse a ``rename`` that is neither a callable nor a mapping of strings to strings (or None).

    Checked before the file is opened, so a wrong argument is named as such and not met
    half-way through the entries.

    Example:
        >>> check_rename({"wte.weight": "embedding.table"})
        >>> from topos import CheckpointError
        >>> try:
        ...     check_rename(["wte.weight"])
        ... except CheckpointError as error:
        ...     print("refused:", "rename must be a mapping" in str(error))
        refused: True
    """
    if rename is None or callable(rename):
        return
    if not isinstance(rename, Mapping):
        raise CheckpointError(
            f"rename must be a mapping from file names to module paths (str -> str or None) or a "
            f"callable name -> str | None; got {type(rename).__name__} {shown(rename)}"
        )
    for key, value in rename.items():
        if not isinstance(key, str) or not (value is None or (isinstance(value, str) and value)):
            raise CheckpointError(
                f"rename must map file names (str) to module paths (non-empty str, or None to drop the entry); "
                f"it maps {shown(key)} to {shown(value)}"
            )


def renamed(entries: Mapping[str, Tensor], rename: Rename | None) -> dict[str, Tensor]:
    """``entries`` under the names ``rename`` gives them (``None`` drops an entry).

    Example:
        >>> from topos import Tensor
        >>> sorted(renamed({"a": Tensor.zeros((1,)), "b": Tensor.zeros((1,))}, {"a": "x", "b": None}))
        ['x']
    """
    return {target: tensor for target, (_, tensor) in renaming(entries, rename).items()}


def renaming(entries: Mapping[str, Tensor], rename: Rename | None) -> dict[str, tuple[str, Tensor]]:
    """Each new name with the file entry it came from and its tensor, so a refusal can name both.

    Example:
        >>> from topos import Tensor
        >>> renaming({"wte.weight": Tensor.zeros((1,))}, {"wte.weight": "table"})["table"][0]
        'wte.weight'
    """
    check_rename(rename)
    result: dict[str, tuple[str, Tensor]] = {}
    for name, tensor in entries.items():
        if rename is None:
            target: object = name
        elif callable(rename):
            try:
                target = rename(name)
            except ToposError:
                raise
            except Exception as error:
                # The user's function failed: say which entry it was given, under our error.
                raise CheckpointError(
                    f"rename raised {type(error).__name__} on the entry name {name!r}: {error}"
                ) from error
        else:
            target = rename.get(name, name)
        if target is None:
            continue
        if not isinstance(target, str) or not target:
            why = "an empty path" if isinstance(target, str) else "not a string"
            raise CheckpointError(f"rename: the name mapping turned {name!r} into {shown(target)}, {why}")
        if target in result:
            raise CheckpointError(
                f"rename: the name mapping sends two entries, {result[target][0]!r} and {name!r}, to {target!r}"
            )
        result[target] = (name, tensor)
    return result
