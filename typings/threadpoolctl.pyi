# The slice of threadpoolctl's API the benchmarks use; the package ships no type hints.
from types import TracebackType
from typing import Any

def threadpool_info() -> list[dict[str, Any]]: ...

class threadpool_limits:
    def __init__(self, limits: int | dict[str, int] | str | None = None, user_api: str | None = None) -> None: ...
    def __enter__(self) -> threadpool_limits: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None: ...
