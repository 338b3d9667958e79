import Foundation
import HearthEngine

/// A function of the app that a model may call in a `ChatSession`: a name, what it does, its
/// arguments as a `Decodable` type (their JSON Schema is read from it, see `Generable`), and
/// the call itself. The model's arguments are generated under the schema, so they always decode.
///
/// ```swift
/// struct Weather: Tool {
///     struct Arguments: Generable { var city: String }
///     let name = "get_weather"
///     let description = "The current weather in a city"
///     func call(_ arguments: Arguments) async throws -> String { "Sunny, 21 °C in \(arguments.city)" }
/// }
/// let chat = model.chat(tools: [Weather()])
/// let answer = try await chat.respond(to: "What's the weather in Paris?")
/// ```
public protocol Tool: Sendable {
    associatedtype Arguments: Generable
    /// The name the model calls it by (letters, digits, `_`, `-`, `.`).
    var name: String { get }
    /// What it does, for the model.
    var description: String { get }
    /// Runs the tool; what it returns goes back to the model as the call's result.
    func call(_ arguments: Arguments) async throws -> String
}

extension Tool {
    /// The tool as the model is told about it.
    public var definition: ToolDefinition {
        get throws { ToolDefinition(name: name, description: description, parameters: try Arguments.jsonSchema) }
    }

    /// Decodes `arguments` and runs the tool.
    func run(_ arguments: JSONValue) async throws -> String {
        let decoded = try JSONDecoder().decode(Arguments.self, from: Data(arguments.jsonText.utf8))
        return try await call(decoded)
    }
}

extension ChatSession {
    /// The result of one call, as the model reads it: the tool's text, or an error it can react to.
    static func run(_ call: ToolCall, with tools: [any Tool]) async -> String {
        guard let tool = tools.first(where: { $0.name == call.name }) else {
            return "Error: there is no tool named \(call.name)."
        }
        do {
            return try await tool.run(call.arguments)
        } catch {
            return "Error: \(error)"
        }
    }
}
