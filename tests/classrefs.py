"""What a jar's classes link against, read from their class files' constant pools (no JVM): for a
test that a replacement library (a ZooKeeper 3.5 client under Kafka 2.0-2.3) still has every class,
method and field the jars built against the old one reference. The JVM links these by name and
descriptor, so a member missing here is a ``NoSuchMethodError`` or ``NoClassDefFoundError`` there.
"""

from __future__ import annotations

import struct
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

# constant pool tags (JVMS 4.4) and the bytes after the tag of every other kind
_UTF8, _CLASS, _FIELD, _METHOD, _IMETHOD = 1, 7, 9, 10, 11
_TWO_INDICES = {9, 10, 11, 12, 17, 18}  # field/method/interface-method refs, name-and-type, (invoke)dynamic
_ONE_INDEX = {7, 8, 16, 19, 20}  # class, string, method type, module, package
_OTHER_SIZES = {3: 4, 4: 4, 5: 8, 6: 8, 15: 3}  # int, float, long, double, method handle

Member = tuple[str, str | None, str | None]  # (class, name, descriptor); name None: the class itself


@dataclass(frozen=True, slots=True)
class ClassFile:
    name: str
    supers: tuple[str, ...]  # the superclass and the interfaces
    members: frozenset[tuple[str, str]]  # (name, descriptor) of its fields and methods
    refs: frozenset[Member]  # what it references: classes, fields and methods of other classes


def _read_pool(data: bytes) -> tuple[list[tuple], int]:
    """The constant pool (index → (tag, value or indices...)) and the offset after it."""
    count = struct.unpack_from(">H", data, 8)[0]
    pool: list[tuple] = [()] * count
    at, k = 10, 1
    while k < count:
        tag = data[at]
        if tag == _UTF8:
            size = struct.unpack_from(">H", data, at + 1)[0]
            pool[k] = (tag, data[at + 3:at + 3 + size].decode("utf-8", "replace"))
            at += 3 + size
        elif tag in _TWO_INDICES:
            pool[k] = (tag, *struct.unpack_from(">HH", data, at + 1))
            at += 5
        elif tag in _ONE_INDEX:
            pool[k] = (tag, struct.unpack_from(">H", data, at + 1)[0])
            at += 3
        else:
            pool[k] = (tag,)
            at += 1 + _OTHER_SIZES[tag]
        k += 2 if tag in (5, 6) else 1  # a long or a double takes two entries
    return pool, at


def _element(name: str) -> str:
    """An array class's element class (``[Lorg/x/Y;`` → ``org/x/Y``); any other name as it is."""
    return name.lstrip("[").removeprefix("L").removesuffix(";")


def parse_class(data: bytes) -> ClassFile:
    pool, at = _read_pool(data)

    def utf8(i: int) -> str:
        return pool[i][1]

    def cls(i: int) -> str:  # the class constant at i
        return _element(utf8(pool[i][1]))

    this, sup, n_ifaces = struct.unpack_from(">HHH", data, at + 2)
    at += 8
    supers = [cls(sup)] if sup else []
    supers += [cls(struct.unpack_from(">H", data, at + 2 * j)[0]) for j in range(n_ifaces)]
    at += 2 * n_ifaces
    members = set()
    for _ in range(2):  # fields, then methods
        n = struct.unpack_from(">H", data, at)[0]
        at += 2
        for _ in range(n):
            _, name, desc, n_attrs = struct.unpack_from(">HHHH", data, at)
            at += 8
            members.add((utf8(name), utf8(desc)))
            for _ in range(n_attrs):
                at += 6 + struct.unpack_from(">I", data, at + 2)[0]
    refs: set[Member] = set()
    for entry in pool:
        if entry and entry[0] == _CLASS:
            refs.add((_element(utf8(entry[1])), None, None))
        elif entry and entry[0] in (_FIELD, _METHOD, _IMETHOD):
            _, name, desc = pool[entry[2]]
            refs.add((cls(entry[1]), utf8(name), utf8(desc)))
    return ClassFile(cls(this), tuple(supers), frozenset(members), frozenset(refs))


def classes(jars: Iterable[Path]) -> Iterator[ClassFile]:
    for jar in jars:
        with zipfile.ZipFile(jar) as z:
            for name in z.namelist():
                if name.endswith(".class") and not name.startswith("META-INF/"):
                    yield parse_class(z.read(name))


def unresolved(users: Iterable[Path], library: Iterable[Path], package: str) -> set[tuple[str, Member]]:
    """(referencing class, member) for each reference of ``users``' classes into ``package`` (e.g.
    ``org/apache/zookeeper/``) that ``library``'s classes lack, up their superclasses and interfaces
    (one outside ``package``, such as ``java/lang/Object``, is taken to have it)."""
    lib = {c.name: c for c in classes(library)}

    def has(owner: str, name: str | None, desc: str | None) -> bool:
        c = lib.get(owner)
        if c is None:
            return not owner.startswith(package)
        return name is None or (name, desc) in c.members or any(has(s, name, desc) for s in c.supers)

    return {(c.name, ref) for c in classes(users) for ref in c.refs
            if ref[0].startswith(package) and not has(*ref)}
