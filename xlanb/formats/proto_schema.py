"""Message classes from a hand-written ``.proto`` of the few fields a reader needs, built in a
private descriptor pool: no generated code, no TensorFlow, no clash with a runtime's own
registration of the same messages."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

FIELD = descriptor_pb2.FieldDescriptorProto


class ProtoFile:
    """One ``.proto`` file of package `package`, message by message."""

    def __init__(self, name: str, package: str) -> None:
        self.package = package
        self.file = descriptor_pb2.FileDescriptorProto(name=name, package=package, syntax="proto3")

    def ref(self, type_name: str) -> str:
        """The full name of a message of this file (``.package.Name``)."""
        return f".{self.package}.{type_name}"

    def message(self, name: str, fields: Iterable[tuple], oneofs: tuple[str, ...] = ()) -> Any:
        """Add message `name`: each field ``(name, number, type[, label[, message type[, oneof
        index]]])``, optional unless a label is given. Returns its descriptor proto."""
        described = self.file.message_type.add(name=name)
        for oneof in oneofs:
            described.oneof_decl.add(name=oneof)
        for spec in fields:
            fname, number, ftype, label, type_name, oneof_index = (*spec, None, None, None)[:6]
            field = described.field.add(
                name=fname, number=number, type=ftype, label=label or FIELD.LABEL_OPTIONAL
            )
            if type_name:
                field.type_name = self.ref(type_name)
            if oneof_index is not None:
                field.oneof_index = oneof_index
        return described

    def classes(self, names: Iterable[str]) -> dict[str, Any]:
        """The message classes of `names`, from a private pool holding this file."""
        pool = descriptor_pool.DescriptorPool()
        pool.Add(self.file)
        return {
            name: message_factory.GetMessageClass(
                pool.FindMessageTypeByName(f"{self.package}.{name}")
            )
            for name in names
        }
