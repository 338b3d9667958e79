import Hearth

/// The tools of a chat request, its tool_choice and response_format, read from the body with
/// their schemas' key order kept.
struct ChatTooling {
    var tools: [ToolDefinition] = []
    var choice = ToolChoice.auto
    var schema: JSONValue?

    init(_ body: JSONValue, parallel: Bool?) throws {
        if let list = body["tools"], list != .null {
            guard let items = list.arrayValue else { throw ServerError.badRequest("tools must be an array.", param: "tools") }
            tools = try items.map { item in
                guard item["type"]?.stringValue ?? "function" == "function", let function = item["function"],
                      let name = function["name"]?.stringValue else {
                    throw ServerError.badRequest("Each tool must be {\"type\": \"function\", \"function\": {\"name\", \"parameters\"…}}.",
                                                 param: "tools")
                }
                return ToolDefinition(name: name, description: function["description"]?.stringValue ?? "",
                                      parameters: function["parameters"] ?? .object([("type", .string("object"))]))
            }
        }
        switch body["tool_choice"] {
        case nil, .null?, .string("auto")?: choice = .auto
        case .string("none")?: choice = .none
        case .string("required")?: choice = .required
        case .object?:
            guard let name = body["tool_choice"]?["function"]?["name"]?.stringValue else {
                throw ServerError.badRequest("tool_choice must be auto, none, required or {\"type\": \"function\", \"function\": {\"name\": …}}.",
                                             param: "tool_choice")
            }
            choice = .tool(name)
        default:
            throw ServerError.badRequest("tool_choice must be auto, none, required or {\"type\": \"function\", \"function\": {\"name\": …}}.",
                                         param: "tool_choice")
        }
        if let format = body["response_format"], format["type"]?.stringValue == "json_schema" {
            guard let schema = format["json_schema"]?["schema"] else {
                throw ServerError.badRequest("response_format json_schema needs json_schema.schema.", param: "response_format")
            }
            self.schema = schema
        }
    }

    func apply(to options: inout GenerationOptions, parallel: Bool?) throws {
        options.tools = tools
        options.toolChoice = choice
        options.parallelToolCalls = parallel ?? true
        if let schema {
            do {
                _ = try Grammar(jsonSchema: schema)
            } catch let error as HearthError {
                throw ServerError.badRequest(error.message, param: "response_format")
            }
            options.jsonSchema = schema
        }
        do {
            try options.validate()
        } catch let error as HearthError {
            throw ServerError.badRequest(error.message, param: tools.isEmpty ? "response_format" : "tools")
        }
        // Each tool's schema must compile; say which does not.
        for tool in tools where choice != .none {
            do {
                _ = try Grammar(jsonSchema: tool.parameters)
            } catch let error as HearthError {
                throw ServerError.badRequest("The parameters of tool \(tool.name): \(error.message)", param: "tools")
            }
        }
    }
}
