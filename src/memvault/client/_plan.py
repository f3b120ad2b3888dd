"""How one SDK method runs, written once for `Client` and `AsyncClient` (sans-IO).

A method is a *flow*: a generator that yields `Call`s (and gets each parsed result back),
`Sleep`s, and for the iterating methods `Emit`s (an item for the caller) and `StreamLines` (a
streamed response whose lines become items). `Plan` walks a flow and turns each `Call` into its
retries (`RetryPolicy`): `Send` one request, maybe `Sleep`, send again. A client only carries
out `Send` and `Sleep` with its own transport, blocking or awaiting; nothing else differs.

The descriptors `endpoint`, `flow` and `items` make a method of the shared definition: on
`Client` a plain function, on `AsyncClient` a coroutine function (or an async generator), with
the definition's name, signature and docstring.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import AsyncIterator, Callable, Coroutine, Generator, Iterator
from dataclasses import dataclass
from types import MethodType
from typing import Any, ClassVar, Generic, ParamSpec, TypeAlias, TypeVar, overload

import httpx

from memvault.client._calls import Call, default_headers, raise_for_error, resolve
from memvault.client._retry import RetryPolicy
from memvault.client.errors import TransportError

P = ParamSpec("P")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Sleep:
    """Wait this many seconds (`time.sleep` or `asyncio.sleep`)."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Send:
    """Send this request once; the reply is the response, or the `httpx.TransportError`."""

    call: Call[Any]

    def request(self) -> dict[str, Any]:
        """The arguments of `httpx.Client.request` (and of the async one)."""
        call = self.call
        return {
            "method": call.method,
            "url": call.path,
            "content": call.body,
            "params": dict(call.params),
            "headers": call.headers(),
        }


@dataclass(frozen=True, slots=True)
class Emit(Generic[T]):
    """An item for the caller of an iterating method."""

    item: T


@dataclass(frozen=True, slots=True)
class StreamLines:
    """Stream `call`'s response; each line through `line` gives an item (None: no item)."""

    call: Call[Any]
    line: Callable[[str], Any]


@dataclass(frozen=True, slots=True)
class Raw:
    """Send `call` with its retries; the reply is the final response, error or not."""

    call: Call[Any]


Step: TypeAlias = Call[Any] | Raw | Sleep | StreamLines
Flow: TypeAlias = Generator[Step, Any, T]
Items: TypeAlias = Generator[Step | Emit[T], Any, None]


class Plan:
    """Walks a flow for a client: iterate it for the `Send`, `Sleep`, `Emit` and `StreamLines`
    steps, setting `reply` to each `Send`'s outcome; `result` is the flow's return value."""

    def __init__(self, flow: Generator[Any, Any, Any], policy: RetryPolicy) -> None:
        self._flow = flow
        self._policy = policy
        self.reply: Any = None
        self.result: Any = None

    def __iter__(self) -> Iterator[Send | Sleep | Emit[Any] | StreamLines]:
        answer: Any = None
        while True:
            try:
                step = self._flow.send(answer)
            except StopIteration as stop:
                self.result = stop.value
                return
            answer = None
            if isinstance(step, Call):
                answer = yield from self._request(step)
            elif isinstance(step, Raw):
                answer = yield from self._request(step.call, raw=True)
            else:
                yield step

    def _request(self, call: Call[Any], raw: bool = False) -> Generator[Send | Sleep, Any, Any]:
        """One call with its retries: the same bytes and `Idempotency-Key` every time."""
        attempt = 0
        while True:
            self.reply = None
            yield Send(call)
            outcome = self.reply
            if isinstance(outcome, httpx.TransportError):
                if attempt >= self._policy.retries:
                    raise TransportError(
                        f"no answer from the server ({type(outcome).__name__}) after "
                        f"{attempt + 1} attempts"
                    ) from outcome
                yield Sleep(self._policy.delay(attempt))
            elif attempt < self._policy.retries and self._policy.retry_response(outcome):
                yield Sleep(self._policy.delay(attempt, outcome))
            elif raw:
                return outcome
            else:
                raise_for_error(outcome)
                return call.parse(outcome)
            attempt += 1


def single(call: Call[T]) -> Flow[T]:
    """The flow of a method that is one call."""
    result: T = yield call
    return result


def response(call: Call[Any]) -> Flow[httpx.Response]:
    """The flow that sends `call` (with retries) and returns its last response unread by the
    error mapping: for a caller that needs its headers (the importer's replay check)."""
    result: httpx.Response = yield Raw(call)
    return result


TransportT = TypeVar("TransportT", httpx.BaseTransport, httpx.AsyncBaseTransport)


class Connection(Generic[TransportT]):
    """A client's base URL, retry policy and httpx connection pool (`HTTP`'s)."""

    HTTP: ClassVar[Callable[..., Any]]

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.2,
        transport: TransportT | None = None,
        session_id: str | None = None,
    ) -> None:
        self.base_url, api_key = resolve(base_url, api_key)
        self.session_id = session_id
        """Sent as `X-Session-Id` on every request (`untrusted()` sets it for its block)."""
        self._policy = RetryPolicy(retries, backoff)
        self._http = self.HTTP(
            base_url=self.base_url,
            headers=default_headers(api_key),
            timeout=timeout,
            transport=transport,
        )

    def _request(self, send: Send) -> dict[str, Any]:
        """`send`'s request arguments, naming the client's session when it has one."""
        args = send.request()
        if self.session_id is not None:
            args["headers"]["X-Session-Id"] = self.session_id
        return args


class SyncTransport(Connection[httpx.BaseTransport]):
    """What a blocking client provides: run a plan's steps one by one."""

    IS_ASYNC: ClassVar[bool] = False
    HTTP = httpx.Client

    def _drive(self, flow: Generator[Any, Any, T]) -> T:
        raise NotImplementedError

    def _iterate(self, flow: Generator[Any, Any, None]) -> Iterator[Any]:
        raise NotImplementedError


class AsyncTransport(Connection[httpx.AsyncBaseTransport]):
    """What an asyncio client provides: await a plan's steps one by one."""

    IS_ASYNC: ClassVar[bool] = True
    HTTP = httpx.AsyncClient

    async def _drive(self, flow: Generator[Any, Any, T]) -> T:
        raise NotImplementedError

    def _iterate(self, flow: Generator[Any, Any, None]) -> AsyncIterator[Any]:
        raise NotImplementedError


_WRAPPED = re.compile(r"^(?:Call|Flow|Items)\[(.*)\]$")


class _Method(Generic[P, T]):
    """A shared method definition, bound as the owner's kind of method (see the module doc)."""

    iterates: ClassVar[bool] = False

    def __init__(self, build: Callable[P, Any]) -> None:
        self._build = build
        self._made: dict[bool, Callable[..., Any]] = {}
        self.__doc__ = build.__doc__
        self.__name__ = build.__name__  # until `__set_name__` gives the method's own

    def _make(self, owner: type) -> Callable[..., Any]:
        is_async = bool(getattr(owner, "IS_ASYNC", False))
        made = self._made.get(is_async)
        if made is None:
            made = self._made[is_async] = self._function(is_async)
        return made

    def _steps(self, args: Any, kwargs: Any) -> Generator[Any, Any, Any]:
        plan = self._build(*args, **kwargs)
        return single(plan) if isinstance(plan, Call) else plan

    def _function(self, is_async: bool) -> Callable[..., Any]:
        steps = self._steps

        def iterating(this: Any, /, *args: Any, **kwargs: Any) -> Any:
            return this._iterate(steps(args, kwargs))

        async def awaited(this: Any, /, *args: Any, **kwargs: Any) -> Any:
            return await this._drive(steps(args, kwargs))

        def blocking(this: Any, /, *args: Any, **kwargs: Any) -> Any:
            return this._drive(steps(args, kwargs))

        method: Any = iterating if self.iterates else awaited if is_async else blocking
        method.__module__ = self._build.__module__
        method.__name__ = self.__name__
        method.__qualname__ = f"Methods.{self.__name__}"
        method.__doc__ = self._build.__doc__
        method.__signature__ = self._signature(is_async)
        return method

    def _signature(self, is_async: bool) -> inspect.Signature:
        signature = inspect.signature(self._build)
        match = _WRAPPED.match(str(signature.return_annotation))
        result = match.group(1) if match else signature.return_annotation
        if self.iterates:
            result = f"{'AsyncIterator' if is_async else 'Iterator'}[{result}]"
        this = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
        parameters = [this, *signature.parameters.values()]
        return signature.replace(parameters=parameters, return_annotation=result)

    def __set_name__(self, owner: type, name: str) -> None:
        self.__name__ = name

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self._make(owner) if owner is not None else self
        return MethodType(self._make(type(instance)), instance)


class endpoint(_Method[P, T]):
    """A method that runs one call or a flow, returning its result."""

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> endpoint[P, T]: ...
    @overload
    def __get__(self, instance: SyncTransport, owner: type | None = None) -> Callable[P, T]: ...
    @overload
    def __get__(
        self, instance: AsyncTransport, owner: type | None = None
    ) -> Callable[P, Coroutine[Any, Any, T]]: ...
    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        return super().__get__(instance, owner)


def call(build: Callable[P, Call[T]]) -> endpoint[P, T]:
    """Decorate a method that is one call (`Call[T]`)."""
    return endpoint(build)


def flow(build: Callable[P, Flow[T]]) -> endpoint[P, T]:
    """Decorate a method that is a flow of calls and sleeps (`Flow[T]`)."""
    return endpoint(build)


class items(_Method[P, T]):
    """A method that yields items (`Items[T]`): an iterator, or an async iterator."""

    iterates = True

    def __init__(self, build: Callable[P, Items[T]]) -> None:
        super().__init__(build)

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> items[P, T]: ...
    @overload
    def __get__(
        self, instance: SyncTransport, owner: type | None = None
    ) -> Callable[P, Iterator[T]]: ...
    @overload
    def __get__(
        self, instance: AsyncTransport, owner: type | None = None
    ) -> Callable[P, AsyncIterator[T]]: ...
    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        return super().__get__(instance, owner)
