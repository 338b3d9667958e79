import Foundation
import Hearth
import HearthTestSupport
import Synchronization
import Testing

/// A struct whose schema the SDK reads from its `Decodable` conformance.
struct Forecast: Generable, Equatable {
    enum Sky: String, Codable, CaseIterable { case sunny, cloudy, rainy }
    struct Wind: Codable, Equatable { var speed: Int; var direction: String }
    var city: String
    var celsius: Int
    var sky: Sky
    var wind: Wind
    var warnings: [String]
    var humidity: Double?
    static let fieldDescriptions = ["celsius": "Temperature in degrees Celsius"]
}

/// The cities a tool was called with.
final class CallLog: Sendable {
    private let cities = Mutex<[String]>([])
    func add(_ city: String) { cities.withLock { $0.append(city) } }
    var all: [String] { cities.withLock { $0 } }
}

/// A tool that records its calls.
struct CityTime: Tool {
    struct Arguments: Generable { var city: String }
    let name = "get_time"
    let description = "The local time in a city"
    let calls: CallLog
    func call(_ arguments: Arguments) async throws -> String {
        calls.add(arguments.city)
        return "It is 14:05 in \(arguments.city)."
    }
}

struct CityWeather: Tool {
    struct Arguments: Generable { var city: String }
    let name = "get_weather"
    let description = "The current weather in a city"
    let calls: CallLog
    func call(_ arguments: Arguments) async throws -> String {
        calls.add(arguments.city)
        return "Sunny and 21 degrees in \(arguments.city)."
    }
}

@Suite struct GenerableSchemaTests {
    /// The schema read from a struct: types, required and optional fields in their order,
    /// nested objects, arrays, an enum's cases, and the descriptions.
    @Test func schemaFromDecodable() throws {
        let schema = try Forecast.jsonSchema
        let expected = try JSONValue(parsing: """
            {"type": "object", "properties": {
              "city": {"type": "string"},
              "celsius": {"type": "integer", "description": "Temperature in degrees Celsius"},
              "sky": {"enum": ["sunny", "cloudy", "rainy"]},
              "wind": {"type": "object", "properties": {"speed": {"type": "integer"}, "direction": {"type": "string"}},
                       "required": ["speed", "direction"], "additionalProperties": false},
              "warnings": {"type": "array", "items": {"type": "string"}},
              "humidity": {"type": "number"}},
             "required": ["city", "celsius", "sky", "wind", "warnings"], "additionalProperties": false}
            """)
        #expect(schema == expected, "\(schema.jsonText)")
    }

    /// A partial JSON text reads as what it holds so far.
    @Test func partialJSON() {
        #expect(JSONValue(partialText: "{\"city\": \"Par") == .object([("city", .string("Par"))]))
        #expect(JSONValue(partialText: "{\"city\": \"Paris\", \"cel") == .object([("city", .string("Paris"))]))
        #expect(JSONValue(partialText: "{\"a\": [1, 2, tr") == .object([("a", .array([.number(1), .number(2)]))]))
        #expect(JSONValue(partialText: "{\"a\": {\"b\": \"x\\u00") == .object([("a", .object([("b", .string("x"))]))]))
        #expect(JSONValue(partialText: "nonsense") == nil)
    }
}

@Suite(.serialized) struct ToolSessionTests {
    static let model = Result { try LocalModel(path: try TestFiles.model(TestFiles.smolLM2), threads: 2, contextLength: 2048) }

    /// The loop: the model must call (first round), both tools run, their results go back, and
    /// the model answers; the conversation keeps the calls and the results in order.
    @Test func toolLoopRunsTheToolsAndAnswers() async throws {
        let model = try Self.model.get()
        let timeCalls = CallLog(), weatherCalls = CallLog()
        var options = GenerationOptions.precise
        options.seed = 3
        options.maxTokens = 150
        let chat = model.chat(system: "You help with travel plans.", options: options,
                              tools: [CityTime(calls: timeCalls), CityWeather(calls: weatherCalls)])
        chat.toolChoice = .required
        let response = try await chat.respond(to: "What is the time and the weather in Paris?")
        #expect(!response.toolCalls.isEmpty)
        let ran = timeCalls.all + weatherCalls.all
        #expect(ran.count == response.toolCalls.count)
        let messages = chat.messages
        #expect(messages.first?.role == .user)
        // Each round: the assistant's calls, then one result per call, in the calls' order.
        var i = 1
        while i < messages.count - 1 {
            let calls = try #require(messages[i].toolCalls, "message \(i) should make calls")
            let results = messages[(i + 1)...].prefix(calls.count)
            #expect(results.map(\.role) == Array(repeating: .tool, count: calls.count))
            #expect(results.compactMap(\.toolCallID) == calls.map(\.id))
            i += 1 + calls.count
        }
        #expect(i == messages.count - 1)
        #expect(messages.last?.role == .assistant && messages.last?.toolCalls == nil)
        #expect(!response.text.isEmpty)
        #expect(response.finishReason == .stop || response.finishReason == .length)
    }

    /// A typed answer, generated under the struct's schema, decodes; streamed, it grows through
    /// partial values to a decoded result.
    @Test func typedGeneration() async throws {
        let model = try Self.model.get()
        var options = GenerationOptions.precise
        options.seed = 1
        options.maxTokens = 300
        let chat = model.chat(options: options)
        let forecast = try await chat.respond(to: "Give tomorrow's forecast for Paris.", generating: Forecast.self)
        #expect(!forecast.city.isEmpty)
        chat.reset()
        var partials = 0
        var final: Forecast?
        for try await event in chat.stream("Give tomorrow's forecast for Paris.", generating: Forecast.self) {
            switch event {
            case .partial: partials += 1
            case .complete(let value): final = value
            }
        }
        #expect(partials > 3)
        // (The second answer reads its prompt from the cache, which can move the draw: it need not equal the first.)
        let city = final?.city ?? ""
        #expect(!city.isEmpty)
    }
}
