"""params.yaml as JSON Schema, and as data: both from the stages' config dataclasses
(``components/<stage>/config.py``), so an editor or the Prefect deployment can check a
params file before a stage reads it.

The schema is pydantic's for each dataclass, read as the loader (``components.core.config``)
reads it: types, defaults, the ranges the fields' types declare, no key outside a config's
fields; each key described by the comment beside its field. What a ``__post_init__`` checks
(a name among a registry's, one field against another) is the loader's alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode, JsonSchemaValue
from pydantic_core import core_schema

from components.core.field_help import field_comments

DIALECT = "https://json-schema.org/draft/2020-12/schema"


class _ParamsSchema(GenerateJsonSchema):
    """pydantic's JSON schema of a dataclass, each field described by its comment in the
    code (closed to other keys by the dataclass's ``PARAMS``)."""

    def dataclass_schema(self, schema: core_schema.DataclassSchema) -> JsonSchemaValue:
        json_schema = super().dataclass_schema(schema)
        comments = field_comments(schema["cls"])
        for name, field_schema in json_schema.get("properties", {}).items():
            if comments.get(name):
                field_schema["description"] = comments[name]
        return json_schema


def params_schema(
    sections: Mapping[str, type], descriptions: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The JSON schema of a params file holding ``sections`` (stage name: config dataclass),
    each described by ``descriptions[name]`` where given; every section optional, as the
    loader fills in the defaults of what a file leaves out."""
    adapters: list[tuple[str, JsonSchemaMode, TypeAdapter[Any]]] = [
        (name, "validation", TypeAdapter(config)) for name, config in sections.items()
    ]
    by_section, definitions = TypeAdapter.json_schemas(
        adapters, schema_generator=_ParamsSchema, title="params.yaml"
    )
    properties = {name: dict(by_section[(name, "validation")]) for name in sections}
    for name, text in (descriptions or {}).items():
        properties[name]["description"] = text
    return {
        "$schema": DIALECT,
        **definitions,  # the title and "$defs": every config class, each once
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }


def params_data(configs: Mapping[str, Any]) -> dict[str, Any]:
    """Validated configs (stage name: config instance) as the plain data of a params file:
    every key, the defaults filled in."""
    return {
        name: TypeAdapter(type(config)).dump_python(config, mode="json")
        for name, config in configs.items()
    }
