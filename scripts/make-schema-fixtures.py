#!/usr/bin/env python3
# Writes the JSON schema fixtures in Tests/Fixtures/schemas: NN-name.json (the schema),
# NN-name.valid.json and NN-name.invalid.json (example documents), after checking with Python's
# jsonschema (and its format checker) that every valid example is valid and every invalid one is
# not. Needs: pip install jsonschema rfc3339-validator. Usage: scripts/make-schema-fixtures.py
import json, os

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "Fixtures", "schemas")
F = []
def fx(name, schema, valid, invalid):
    F.append((name, schema, valid, invalid))

fx("01-person",
   {"type": "object", "properties": {"name": {"type": "string", "maxLength": 40}, "age": {"type": "integer", "minimum": 0, "maximum": 150}},
    "required": ["name", "age"], "additionalProperties": False},
   [{"name": "Ada", "age": 36}, {"name": "", "age": 0}, {"name": "Zoë \"Z\" Smith\n", "age": 150}],
   [{"name": "Ada"}, {"name": "Ada", "age": 151}, {"name": "Ada", "age": -1}, {"name": "Ada", "age": 3.5},
    {"name": "x" * 41, "age": 3}, {"name": "Ada", "age": 36, "extra": True}, [], "Ada"])

fx("02-boolean-answer",
   {"type": "object", "properties": {"answer": {"type": "boolean"}}, "required": ["answer"], "additionalProperties": False},
   [{"answer": True}, {"answer": False}],
   [{}, {"answer": "yes"}, {"answer": None}, {"answer": 1}])

fx("03-color-enum",
   {"type": "string", "enum": ["red", "green", "blue"], "description": "A primary color of light."},
   ["red", "green", "blue"],
   ["Red", "yellow", "", 1, None])

fx("04-const-header",
   {"type": "object", "properties": {"version": {"const": 2}, "kind": {"const": "report"}, "draft": {"type": "boolean"}},
    "required": ["version", "kind"], "additionalProperties": False},
   [{"version": 2, "kind": "report"}, {"version": 2, "kind": "report", "draft": True}],
   [{"version": 3, "kind": "report"}, {"version": 2, "kind": "Report"}, {"kind": "report"}, {"version": 2, "kind": "report", "draft": "no"}])

fx("05-optional-in-order",
   {"type": "object", "properties": {
       "title": {"type": "string", "minLength": 1, "maxLength": 30},
       "subtitle": {"type": "string", "maxLength": 30},
       "year": {"type": "integer", "minimum": 1900, "maximum": 2100},
       "rating": {"type": "number", "minimum": 0, "maximum": 5}},
    "required": ["title", "year"], "additionalProperties": False},
   [{"title": "Dune", "year": 1965}, {"title": "Dune", "subtitle": "Part One", "year": 2021, "rating": 4.5},
    {"title": "A", "year": 1900, "rating": 0}, {"title": "B", "subtitle": "", "year": 2100, "rating": 5}],
   [{"title": "", "year": 2000}, {"title": "Dune"}, {"title": "Dune", "year": 1899}, {"title": "Dune", "year": 2000, "rating": 5.01},
    {"title": "Dune", "year": 2000, "rating": -0.5}, {"subtitle": "x", "year": 2000}])

fx("06-nullable-types",
   {"type": "object", "properties": {"nickname": {"type": ["string", "null"], "maxLength": 20}, "score": {"type": ["integer", "null"]}},
    "required": ["nickname", "score"], "additionalProperties": False},
   [{"nickname": None, "score": None}, {"nickname": "Ace", "score": -12}, {"nickname": "", "score": 0}],
   [{"nickname": 3, "score": None}, {"nickname": None, "score": 1.5}, {"nickname": None}, {"nickname": "x" * 21, "score": 1}])

fx("07-integer-range",
   {"type": "object", "properties": {"celsius": {"type": "integer", "minimum": -40, "maximum": 125},
                                     "floor": {"type": "integer", "minimum": -3, "maximum": 163}},
    "required": ["celsius", "floor"], "additionalProperties": False},
   [{"celsius": -40, "floor": -3}, {"celsius": 125, "floor": 163}, {"celsius": 0, "floor": 0}, {"celsius": 99, "floor": 100},
    {"celsius": -9, "floor": 19}],
   [{"celsius": -41, "floor": 0}, {"celsius": 126, "floor": 0}, {"celsius": 0, "floor": 164}, {"celsius": 0, "floor": -4},
    {"celsius": 1000, "floor": 1}, {"celsius": 20.5, "floor": 1}])

fx("08-exclusive-bounds",
   {"type": "object", "properties": {"percent": {"type": "number", "exclusiveMinimum": 0, "maximum": 100},
                                     "count": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 1000}},
    "required": ["percent", "count"], "additionalProperties": False},
   [{"percent": 0.001, "count": 1}, {"percent": 100, "count": 999}, {"percent": 55.5, "count": 500}, {"percent": 99.99, "count": 10}],
   [{"percent": 0, "count": 1}, {"percent": 100.5, "count": 1}, {"percent": 50, "count": 0}, {"percent": 50, "count": 1000},
    {"percent": -1, "count": 5}])

fx("09-decimal-bounds",
   {"type": "object", "properties": {"latitude": {"type": "number", "minimum": -90, "maximum": 90},
                                     "longitude": {"type": "number", "minimum": -180, "maximum": 180},
                                     "price": {"type": "number", "minimum": 0.01, "maximum": 999.99}},
    "required": ["latitude", "longitude", "price"], "additionalProperties": False},
   [{"latitude": 48.8566, "longitude": 2.3522, "price": 0.01}, {"latitude": -90, "longitude": 180, "price": 999.99},
    {"latitude": 0, "longitude": -179.5, "price": 12}],
   [{"latitude": 90.5, "longitude": 0, "price": 1}, {"latitude": 0, "longitude": -180.01, "price": 1},
    {"latitude": 0, "longitude": 0, "price": 0.009}, {"latitude": 0, "longitude": 0, "price": 1000}, {"latitude": 0, "longitude": 0}])

fx("10-tags-array",
   {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 15}, "minItems": 1, "maxItems": 4}},
    "required": ["tags"], "additionalProperties": False},
   [{"tags": ["a"]}, {"tags": ["red", "green", "blue", "cyan"]}],
   [{"tags": []}, {"tags": ["a", "b", "c", "d", "e"]}, {"tags": [""]}, {"tags": ["a", 1]}, {"tags": "a"}])

fx("11-tuple",
   {"type": "array", "prefixItems": [{"type": "string", "maxLength": 20}, {"type": "integer", "minimum": 1, "maximum": 12}, {"type": "boolean"}],
    "items": False, "minItems": 2},
   [["March", 3], ["December", 12, True], ["", 1, False]],
   [["March"], ["March", 13], ["March", 3, "yes"], ["March", 3, True, 1], [3, "March"], []])

fx("12-pattern-contact",
   {"type": "object", "properties": {"phone": {"type": "string", "pattern": "^\\+?[0-9]{1,3}-[0-9]{3}-[0-9]{4}$"},
                                     "zip": {"type": "string", "pattern": "^[0-9]{5}(-[0-9]{4})?$"}},
    "required": ["phone", "zip"], "additionalProperties": False},
   [{"phone": "+1-555-0100", "zip": "12345"}, {"phone": "44-207-9460", "zip": "12345-6789"}],
   [{"phone": "555-0100", "zip": "12345"}, {"phone": "+1-555-0100", "zip": "1234"}, {"phone": "+1234-555-0100", "zip": "12345"},
    {"phone": "+1-555-0100", "zip": "12345-678"}])

fx("13-pattern-codes",
   {"type": "object", "properties": {
       "sku": {"type": "string", "pattern": "^[A-Z]{3}-\\d{4}$"},
       "slug": {"type": "string", "pattern": "^[a-z0-9]{1,10}(?:-[a-z0-9]{1,10}){0,3}$", "maxLength": 43},
       "hex": {"type": "string", "pattern": "^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"},
       "word": {"type": "string", "pattern": "^\\w{2,8}( \\w{2,8})?$"}},
    "required": ["sku", "slug", "hex", "word"], "additionalProperties": False},
   [{"sku": "ABC-1234", "slug": "hello-world", "hex": "#fff", "word": "ok"}, {"sku": "XYZ-0000", "slug": "a", "hex": "#00FF7a", "word": "snake_c two"}],
   [{"sku": "AB-1234", "slug": "a", "hex": "#fff", "word": "ok"}, {"sku": "ABC-1234", "slug": "-a", "hex": "#fff", "word": "ok"},
    {"sku": "ABC-1234", "slug": "a", "hex": "#ffff", "word": "ok"}, {"sku": "ABC-1234", "slug": "a", "hex": "#fff", "word": "x"},
    {"sku": "ABC-1234", "slug": "Abc", "hex": "#fff", "word": "ok"}])

fx("14-dates-and-times",
   {"type": "object", "properties": {"date": {"type": "string", "format": "date"}, "time": {"type": "string", "format": "time"},
                                     "timestamp": {"type": "string", "format": "date-time"}},
    "required": ["date", "time", "timestamp"], "additionalProperties": False},
   [{"date": "2024-02-29", "time": "23:59:59Z", "timestamp": "2000-02-29T12:00:00.123+05:30"},
    {"date": "0001-01-01", "time": "00:00:00-08:00", "timestamp": "1999-12-31T23:59:59Z"}],
   [{"date": "2023-02-29", "time": "12:00:00Z", "timestamp": "2000-01-01T00:00:00Z"},
    {"date": "1900-02-29", "time": "12:00:00Z", "timestamp": "2000-01-01T00:00:00Z"},
    {"date": "2024-04-31", "time": "12:00:00Z", "timestamp": "2000-01-01T00:00:00Z"},
    {"date": "2024-01-01", "time": "24:00:00Z", "timestamp": "2000-01-01T00:00:00Z"},
    {"date": "2024-01-01", "time": "12:00:00", "timestamp": "2000-01-01T00:00:00Z"},
    {"date": "2024-01-01", "time": "12:00:00Z", "timestamp": "2000-13-01T00:00:00Z"},
    {"date": "0000-01-01", "time": "12:00:00Z", "timestamp": "2000-01-01T00:00:00Z"}])

fx("15-uuid-email",
   {"type": "object", "properties": {"id": {"type": "string", "format": "uuid"}, "email": {"type": "string", "format": "email"}},
    "required": ["id", "email"], "additionalProperties": False},
   [{"id": "123e4567-e89b-12d3-a456-426614174000", "email": "ada@example.com"},
    {"id": "00000000-0000-0000-0000-00000000ABCD", "email": "first.last+tag@mail.example.co.uk"}],
   [{"id": "123e4567e89b12d3a456426614174000", "email": "ada@example.com"}, {"id": "123e4567-e89b-12d3-a456-42661417400g", "email": "a@b.c"},
    {"id": "123e4567-e89b-12d3-a456-426614174000", "email": "no-at-sign"}])

fx("16-nested-address",
   {"type": "object", "properties": {
       "name": {"type": "string", "maxLength": 30},
       "address": {"type": "object", "properties": {"street": {"type": "string", "maxLength": 40}, "city": {"type": "string", "maxLength": 30},
                                                    "country": {"type": "string", "enum": ["FR", "DE", "US", "JP"]}},
                   "required": ["city", "country"], "additionalProperties": False}},
    "required": ["name", "address"], "additionalProperties": False},
   [{"name": "Ada", "address": {"city": "Paris", "country": "FR"}}, {"name": "Bo", "address": {"street": "1 Main St", "city": "Austin", "country": "US"}}],
   [{"name": "Ada", "address": {"city": "Paris"}}, {"name": "Ada", "address": {"city": "Paris", "country": "UK"}}, {"name": "Ada"},
    {"name": "Ada", "address": "Paris"}])

fx("17-order-lines",
   {"type": "array", "items": {"type": "object", "properties": {"product": {"type": "string", "maxLength": 20}, "quantity": {"type": "integer", "minimum": 1, "maximum": 99}},
                               "required": ["product", "quantity"], "additionalProperties": False},
    "minItems": 1, "maxItems": 3},
   [[{"product": "apple", "quantity": 3}], [{"product": "a", "quantity": 1}, {"product": "b", "quantity": 99}, {"product": "c", "quantity": 50}]],
   [[], [{"product": "apple", "quantity": 0}], [{"product": "apple"}], [{"product": "a", "quantity": 1}] * 4])

fx("18-defs-refs",
   {"$defs": {"point": {"type": "object", "properties": {"x": {"type": "integer", "minimum": -100, "maximum": 100}, "y": {"type": "integer", "minimum": -100, "maximum": 100}},
                        "required": ["x", "y"], "additionalProperties": False},
              "label": {"type": "string", "maxLength": 12}},
    "type": "object", "properties": {"from": {"$ref": "#/$defs/point"}, "to": {"$ref": "#/$defs/point"}, "label": {"$ref": "#/$defs/label"}},
    "required": ["from", "to"], "additionalProperties": False},
   [{"from": {"x": 0, "y": 0}, "to": {"x": 100, "y": -100}}, {"from": {"x": 1, "y": 2}, "to": {"x": 3, "y": 4}, "label": "segment"}],
   [{"from": {"x": 0, "y": 0}}, {"from": {"x": 0, "y": 101}, "to": {"x": 0, "y": 0}}, {"from": {"x": 0}, "to": {"x": 0, "y": 0}},
    {"from": {"x": 0, "y": 0}, "to": {"x": 0, "y": 0}, "label": 3}])

fx("19-draft7-definitions",
   {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Book",
    "definitions": {"author": {"type": "object", "properties": {"first": {"type": "string", "maxLength": 20}, "last": {"type": "string", "maxLength": 20}},
                               "required": ["last"], "additionalProperties": False}},
    "type": "object", "properties": {"title": {"type": "string", "maxLength": 40}, "authors": {"type": "array", "items": {"$ref": "#/definitions/author"}, "minItems": 1, "maxItems": 3},
                                     "pages": {"type": "integer", "minimum": 1, "maximum": 5000}},
    "required": ["title", "authors"], "additionalProperties": False},
   [{"title": "Emma", "authors": [{"first": "Jane", "last": "Austen"}], "pages": 474}, {"title": "X", "authors": [{"last": "Anon"}]}],
   [{"title": "Emma", "authors": []}, {"title": "Emma", "authors": [{"first": "Jane"}]}, {"title": "Emma", "authors": [{"last": "A"}], "pages": 0}])

fx("20-recursive-tree",
   {"$defs": {"node": {"type": "object", "properties": {"value": {"type": "integer", "minimum": 0, "maximum": 9},
                                                        "children": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}},
                       "required": ["value"], "additionalProperties": False}},
    "$ref": "#/$defs/node"},
   [{"value": 1}, {"value": 1, "children": []}, {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}, {"value": 4}]}],
   [{"children": []}, {"value": 10}, {"value": 1, "children": [{"value": 2}, {"value": 3}, {"value": 4}]}, {"value": 1, "children": [{"value": -1}]}])

fx("21-linked-list",
   {"$defs": {"item": {"type": "object", "properties": {"label": {"type": "string", "maxLength": 10},
                                                        "next": {"anyOf": [{"$ref": "#/$defs/item"}, {"type": "null"}]}},
                       "required": ["label", "next"], "additionalProperties": False}},
    "$ref": "#/$defs/item"},
   [{"label": "a", "next": None}, {"label": "a", "next": {"label": "b", "next": {"label": "c", "next": None}}}],
   [{"label": "a"}, {"label": "a", "next": {"label": "b"}}, {"label": "a", "next": 3}])

fx("22-anyof-shapes",
   {"anyOf": [
       {"type": "object", "properties": {"shape": {"const": "circle"}, "radius": {"type": "number", "exclusiveMinimum": 0, "maximum": 100}}, "required": ["shape", "radius"], "additionalProperties": False},
       {"type": "object", "properties": {"shape": {"const": "rectangle"}, "width": {"type": "number", "exclusiveMinimum": 0, "maximum": 100}, "height": {"type": "number", "exclusiveMinimum": 0, "maximum": 100}},
        "required": ["shape", "width", "height"], "additionalProperties": False}]},
   [{"shape": "circle", "radius": 2.5}, {"shape": "rectangle", "width": 3, "height": 4}],
   [{"shape": "circle", "width": 3, "height": 4}, {"shape": "circle", "radius": 0}, {"shape": "triangle", "radius": 1}, {"shape": "rectangle", "width": 3}])

fx("23-oneof-pets",
   {"oneOf": [
       {"type": "object", "properties": {"kind": {"const": "cat"}, "lives": {"type": "integer", "minimum": 1, "maximum": 9}}, "required": ["kind", "lives"]},
       {"type": "object", "properties": {"kind": {"const": "dog"}, "good": {"type": "boolean"}}, "required": ["kind", "good"]},
       {"type": "string", "maxLength": 12}]},
   [{"kind": "cat", "lives": 9}, {"kind": "dog", "good": True}, "a fish"],
   [{"kind": "cat", "lives": 10}, {"kind": "dog"}, {"kind": "cow", "good": True}, 3, "a very long fish name"])

fx("24-allof-employee",
   {"$defs": {"person": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 30}, "email": {"type": "string", "format": "email"}}, "required": ["name"]}},
    "allOf": [{"$ref": "#/$defs/person"},
              {"type": "object", "properties": {"role": {"enum": ["engineer", "designer", "manager"]}, "salary": {"type": "integer", "minimum": 30000, "maximum": 500000}},
               "required": ["role", "salary"]}]},
   [{"name": "Ada", "role": "engineer", "salary": 120000}, {"name": "Bo", "email": "bo@example.org", "role": "manager", "salary": 30000}],
   [{"name": "Ada", "role": "engineer"}, {"role": "engineer", "salary": 50000}, {"name": "Ada", "role": "cook", "salary": 50000},
    {"name": "Ada", "role": "engineer", "salary": 29999}])

fx("25-additional-scores",
   {"type": "object", "properties": {"student": {"type": "string", "maxLength": 20}},
    "required": ["student"], "additionalProperties": {"type": "integer", "minimum": 0, "maximum": 100}},
   [{"student": "Ada"}, {"student": "Ada", "math": 90, "art": 75}, {"student": "Ada", "students": 3, "": 0}],
   [{"student": "Ada", "math": 101}, {"student": "Ada", "math": "A"}, {"math": 90}, {"student": 5}])

fx("26-enum-mixed",
   {"type": "object", "properties": {"status": {"enum": ["active", "inactive", None, 1, 2.5, True, {"code": 7}, [1, "two"]]},
                                     "level": {"type": "string", "enum": ["low", "medium", "high", 3]}},
    "required": ["status", "level"], "additionalProperties": False},
   [{"status": "active", "level": "low"}, {"status": None, "level": "high"}, {"status": 2.5, "level": "medium"},
    {"status": {"code": 7}, "level": "low"}, {"status": [1, "two"], "level": "low"}, {"status": True, "level": "low"}],
   [{"status": "Active", "level": "low"}, {"status": "active", "level": 3}, {"status": 2, "level": "low"}, {"status": {"code": 8}, "level": "low"},
    {"status": False, "level": "low"}])

fx("27-string-lengths",
   {"type": "object", "properties": {"code": {"type": "string", "minLength": 3, "maxLength": 3}, "note": {"type": "string", "minLength": 1, "maxLength": 20}},
    "required": ["code", "note"], "additionalProperties": False},
   [{"code": "abc", "note": "x"}, {"code": "日本語", "note": "tab\there \"quoted\""}, {"code": "\n\t\\", "note": "12345678901234567890"}],
   [{"code": "ab", "note": "x"}, {"code": "abcd", "note": "x"}, {"code": "abc", "note": ""}, {"code": "abc", "note": "123456789012345678901"}])

fx("28-matrix",
   {"type": "array", "items": {"type": "array", "items": {"type": "integer", "minimum": -9, "maximum": 9}, "minItems": 2, "maxItems": 2}, "minItems": 2, "maxItems": 2},
   [[[1, 0], [0, 1]], [[-9, 9], [3, -4]]],
   [[[1, 0]], [[1, 0], [0, 1], [1, 1]], [[1, 0], [0]], [[1, 0], [0, 10]], [[1, 0], [0, 1.5]]])

fx("29-escaped-keys",
   {"type": "object", "properties": {"名前": {"type": "string", "maxLength": 10}, "say \"hi\"": {"type": "boolean"}, "path/to~x": {"type": "null"}},
    "required": ["名前", "say \"hi\""], "additionalProperties": False},
   [{"名前": "太郎", "say \"hi\"": True}, {"名前": "", "say \"hi\"": False, "path/to~x": None}],
   [{"名前": "太郎"}, {"名前": "太郎", "say \"hi\"": 1}, {"名前": "太郎", "say \"hi\"": True, "path/to~x": 0}])

fx("30-catalog",
   {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "Catalog entry",
    "$defs": {
        "money": {"type": "object", "properties": {"amount": {"type": "number", "minimum": 0, "maximum": 10000}, "currency": {"enum": ["EUR", "USD", "JPY"]}},
                  "required": ["amount", "currency"], "additionalProperties": False},
        "variant": {"type": "object", "properties": {"sku": {"type": "string", "pattern": "^[A-Z]{2}[0-9]{3}$"}, "size": {"enum": ["S", "M", "L"]}, "price": {"$ref": "#/$defs/money"}},
                    "required": ["sku", "price"], "additionalProperties": False}},
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 30},
        "released": {"type": "string", "format": "date"},
        "variants": {"type": "array", "items": {"$ref": "#/$defs/variant"}, "minItems": 1, "maxItems": 2},
        "rating": {"anyOf": [{"type": "integer", "minimum": 1, "maximum": 5}, {"type": "null"}]},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 10}, "maxItems": 3}},
    "required": ["name", "variants", "rating"], "additionalProperties": False},
   [{"name": "Shirt", "variants": [{"sku": "SH001", "price": {"amount": 19.99, "currency": "EUR"}}], "rating": None},
    {"name": "Hat", "released": "2023-05-01", "variants": [{"sku": "HA100", "size": "M", "price": {"amount": 5, "currency": "USD"}},
                                                            {"sku": "HA101", "price": {"amount": 0, "currency": "JPY"}}], "rating": 4, "tags": ["wool", "red"]}],
   [{"name": "Shirt", "variants": [], "rating": None}, {"name": "Shirt", "variants": [{"sku": "sh001", "price": {"amount": 1, "currency": "EUR"}}], "rating": None},
    {"name": "Shirt", "variants": [{"sku": "SH001", "price": {"amount": 1, "currency": "GBP"}}], "rating": None},
    {"name": "Shirt", "variants": [{"sku": "SH001", "price": {"amount": 1, "currency": "EUR"}}], "rating": 6},
    {"name": "Shirt", "variants": [{"sku": "SH001", "price": {"amount": 1, "currency": "EUR"}}]}])

from jsonschema import validators, Draft202012Validator
for name, schema, valid, invalid in F:
    cls = validators.validator_for(schema, default=Draft202012Validator)
    cls.check_schema(schema)
    v = cls(schema, format_checker=cls.FORMAT_CHECKER)
    for d in valid:
        errs = list(v.iter_errors(d))
        assert not errs, (name, d, errs[0].message)
    for d in invalid:
        assert list(v.iter_errors(d)), (name, "should be invalid", d)
    def dump(x, path):
        with open(path, "w") as f:
            f.write(json.dumps(x, indent=2, ensure_ascii=False) + "\n")
    dump(schema, f"{out}/{name}.json")
    dump(valid, f"{out}/{name}.valid.json")
    dump(invalid, f"{out}/{name}.invalid.json")
print(len(F), "fixtures")
