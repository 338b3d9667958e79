import Foundation
import HearthConstraints
import HearthCore
import HearthTestSupport
import Testing

/// `hearth run --schema FILE` and `--grammar FILE`: answers held to a JSON Schema or a GBNF
/// grammar, with the files named by relative paths as people type them.
@Suite("hearth run --schema and --grammar", .serialized)
struct ConstrainedOutputTests {
    private func hearth(_ arguments: [String], in directory: TemporaryDirectory) async throws -> (status: Int32, output: String, errors: String) {
        let child = try Child(try TestFiles.hearthBinary, arguments, environment: ProcessInfo.processInfo.environment, directory: directory,
                              workingDirectory: directory.url)
        let status = try await child.wait()
        return (status, child.outputText, child.errorText)
    }

    static let pet = #"""
    {"type": "object",
     "properties": {"name": {"type": "string", "maxLength": 20},
                    "legs": {"type": "integer", "minimum": 0, "maximum": 8},
                    "sound": {"enum": ["meow", "woof", "none"]},
                    "friends": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 3}},
     "required": ["name", "legs", "sound"], "additionalProperties": false}
    """#

    @Test("sampled answers under --schema are JSON the schema accepts")
    func schemaAnswers() async throws {
        let directory = try TemporaryDirectory()
        try Self.pet.write(to: directory.file("pet.json"), atomically: true, encoding: .utf8)
        let model = try TestFiles.model(TestFiles.smolLM2)
        var answers: [String] = []
        for seed in 1...4 {
            let run = try await hearth(["run", model, "Describe a cat.", "--schema", "pet.json", "--temp", "1", "--seed", "\(seed)",
                                        "-n", "200", "-t", "2"], in: directory)
            #expect(run.status == 0, "\(run.errors)")
            #expect(run.output.hasSuffix("\n"))
            answers.append(String(run.output.dropLast()))
        }
        let verdicts = try PythonJSONSchema.validate(schema: try JSONValue(parsing: Self.pet), documents: answers)
        for (answer, verdict) in zip(answers, verdicts) {
            #expect(verdict == nil, "\(answer): \(verdict ?? "")")
        }
    }

    @Test("sampled answers under --grammar match the grammar")
    func grammarAnswers() async throws {
        let directory = try TemporaryDirectory()
        let text = #"""
        # A shopping list: two to four lines, each a count and one or two items.
        root ::= line line line? line?
        line ::= [1-9] [0-9]? " " item (" and " item)? "\n"
        item ::= "apples" | "pears" | "bread" | "milk"
        """#
        try text.write(to: directory.file("list.gbnf"), atomically: true, encoding: .utf8)
        let recognizer = EarleyRecognizer(try Grammar(gbnf: text))
        let model = try TestFiles.model(TestFiles.smolLM2)
        for seed in 1...4 {
            let run = try await hearth(["run", model, "Write a shopping list.", "--grammar", "./list.gbnf", "--temp", "1",
                                        "--seed", "\(seed)", "-n", "120", "-t", "2"], in: directory)
            #expect(run.status == 0, "\(run.errors)")
            // `hearth run` ends with a newline of its own after the answer.
            let answer = String(run.output.dropLast())
            let matches = recognizer.matches(answer)
            #expect(matches, "\(answer.debugDescription)")
        }
    }

    @Test("schemas and grammars Hearth cannot use are refused by name before the model loads")
    func refusals() async throws {
        let directory = try TemporaryDirectory()
        try #"{"type": "array", "uniqueItems": true}"#.write(to: directory.file("unique.json"), atomically: true, encoding: .utf8)
        try #"{"type": "object""#.write(to: directory.file("cut.json"), atomically: true, encoding: .utf8)
        try "root ::= \"a\" missing\n".write(to: directory.file("bad.gbnf"), atomically: true, encoding: .utf8)
        try #"root ::= "yes""#.write(to: directory.file("yes.gbnf"), atomically: true, encoding: .utf8)
        // No model is read for any of these: a path that is not there shows it.
        let model = directory.file("absent.gguf").path
        let cases: [(arguments: [String], says: [String])] = [
            (["--schema", "unique.json"], ["unique.json", "uniqueItems"]),
            (["--schema", "cut.json"], ["cut.json"]),
            (["--schema", "nowhere.json"], ["Cannot read the schema file nowhere.json"]),
            (["--grammar", "bad.gbnf"], ["bad.gbnf", "missing"]),
            (["--schema", "unique.json", "--grammar", "yes.gbnf"], ["--schema or --grammar, not both"]),
        ]
        for entry in cases {
            let run = try await hearth(["run", model, "Hi"] + entry.arguments, in: directory)
            #expect(run.status != 0, "\(entry.arguments)")
            #expect(run.output.isEmpty)
            for words in entry.says { #expect(run.errors.contains(words), "\(entry.arguments): \(run.errors)") }
            #expect(!run.errors.contains("absent.gguf"), "\(entry.arguments): the model was looked for: \(run.errors)")
        }
    }
}
