import Foundation
import HearthCore

/// The JSON schemas in Tests/Fixtures/schemas: `NN-name.json`, with example documents the schema
/// accepts (`NN-name.valid.json`) and refuses (`NN-name.invalid.json`), each a JSON list.
public enum JSONSchemaFixtures {
    public static let directory = TestFiles.packageRoot.appendingPathComponent("Tests/Fixtures/schemas")

    /// The fixtures' names, in order.
    public static let names: [String] = {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return files.filter { $0.hasSuffix(".json") && !$0.hasSuffix(".valid.json") && !$0.hasSuffix(".invalid.json") && $0 != "sampling.json" }
            .map { String($0.dropLast(5)) }.sorted()
    }()

    public static func text(_ file: String) throws -> String {
        try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
    }

    /// The schema called `name`, its keys in their written order.
    public static func schema(_ name: String) throws -> JSONValue {
        try JSONValue(parsing: try text("\(name).json"))
    }

    /// The documents of `name`'s list `kind` ("valid" or "invalid").
    public static func examples(_ name: String, _ kind: String) throws -> [JSONValue] {
        guard case .array(let items) = try JSONValue(parsing: try text("\(name).\(kind).json")) else {
            throw TestFiles.Missing(description: "\(name).\(kind).json is not a JSON list")
        }
        return items
    }

    /// `value` pretty-printed as Python's `json.dumps(indent: 2)` writes it.
    public static func pretty(_ value: JSONValue, indent: String = "") -> String {
        let inner = indent + "  "
        switch value {
        case .array(let items) where !items.isEmpty:
            return "[\n" + items.map { inner + pretty($0, indent: inner) }.joined(separator: ",\n") + "\n" + indent + "]"
        case .object(let members) where !members.isEmpty:
            return "{\n" + members.map { m in
                var key = ""
                JSONValue.quote(m.key, into: &key)
                return inner + key + ": " + pretty(m.value, indent: inner)
            }.joined(separator: ",\n") + "\n" + indent + "}"
        default:
            return value.jsonText
        }
    }
}

/// Python's `jsonschema` (with its format checker), the reference for what a schema accepts.
public enum PythonJSONSchema {
    static let script = #"""
    import json, sys
    from jsonschema import validators, Draft202012Validator
    request = json.load(open(sys.argv[1], encoding="utf-8"))
    schema = request["schema"]
    cls = validators.validator_for(schema, default=Draft202012Validator)
    cls.check_schema(schema)
    validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
    results = []
    for text in request["documents"]:
        try:
            document = json.loads(text)
        except ValueError as e:
            results.append("not JSON: %s" % e)
            continue
        errors = list(validator.iter_errors(document))
        results.append("; ".join(e.message for e in errors[:3]) if errors else None)
    json.dump(results, sys.stdout)
    """#

    /// Whether python3 has jsonschema.
    public static var isAvailable: Bool { Python.canImport("jsonschema") }

    /// For each document (JSON text), nil when `schema` accepts it, else why not; one python3 run for all.
    public static func validate(schema: JSONValue, documents: [String]) throws -> [String?] {
        guard isAvailable else {
            throw TestFiles.Missing(description: "Python's jsonschema is missing: pip install jsonschema (as .ci/run does).")
        }
        let request = JSONValue.object([("schema", schema), ("documents", .array(documents.map { .string($0) }))])
        let folder = try TemporaryDirectory()
        let file = folder.file("request.json")
        try Data(request.jsonText.utf8).write(to: file)
        let (status, data, message) = try Child.run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", script, file.path])
        guard status == 0, case .array(let results) = try JSONValue(parsing: data), results.count == documents.count else {
            throw TestFiles.Missing(description: "python3 jsonschema failed: \(String(decoding: message, as: UTF8.self))")
        }
        return results.map { $0.stringValue }
    }
}
