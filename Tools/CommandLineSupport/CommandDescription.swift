/// One description of a program's commands: `--help`, `help COMMAND`, the man page and the
/// bash and zsh completions are all rendered from it, so they cannot drift apart.
public struct ProgramDescription: Sendable, Encodable {
    public var name: String
    /// One line for the man page's NAME section.
    public var summary: String
    /// Options that come before the command (`--pool PATH`).
    public var globalOptions: [OptionDescription]
    public var commands: [CommandDescription]
    /// Paragraphs shown after the commands (units).
    public var notes: [String]
    /// Each exit status and what it means ("0", "ok"): the man page's EXIT STATUS, and one
    /// line of the usage.
    public var exitStatus: [Definition]
    /// The variables the program reads: the man page's ENVIRONMENT.
    public var environment: [Definition]
    /// The files it reads or writes by default: the man page's FILES.
    public var files: [Definition]
    /// Pages of other programs and calls, "fallocate(2)": the man page's SEE ALSO.
    public var seeAlso: [String]

    public init(name: String, summary: String, globalOptions: [OptionDescription], commands: [CommandDescription],
                notes: [String], exitStatus: [Definition], environment: [Definition] = [], files: [Definition] = [],
                seeAlso: [String] = []) {
        self.name = name
        self.summary = summary
        self.globalOptions = globalOptions
        self.commands = commands
        self.notes = notes
        self.exitStatus = exitStatus
        self.environment = environment
        self.files = files
        self.seeAlso = seeAlso
    }

    /// A term and its meaning, as a man page's tagged paragraph (`.TP`) shows it.
    public struct Definition: Sendable, Encodable {
        public var term: String
        public var meaning: String

        public init(_ term: String, _ meaning: String) {
            self.term = term
            self.meaning = meaning
        }
    }

    public func command(named name: String) -> CommandDescription? { commands.first { $0.name == name } }
}

/// One command: its name, its positional arguments and its options.
public struct CommandDescription: Sendable, Encodable {
    public var name: String
    /// Positional arguments as the synopsis shows them ("SIZE", "HELD [DEST]").
    public var arguments: String
    public var summary: String
    public var options: [OptionDescription]
    /// The command runs when no command word is given (provideo-bench's measurement); the
    /// synopsis shows the word in brackets.
    public var isDefault: Bool

    public init(_ name: String, arguments: String = "", summary: String, options: [OptionDescription] = [],
                isDefault: Bool = false) {
        self.name = name
        self.arguments = arguments
        self.summary = summary
        self.options = options
        self.isDefault = isDefault
    }
}

/// One option: `--name`, or `--name VALUE` when `value` is set.
public struct OptionDescription: Sendable, Encodable {
    public var name: String
    /// The value's placeholder ("SIZE"), nil for a flag.
    public var value: String?
    public var summary: String
    /// The words the value can be, offered by the completions (empty: any word).
    public var choices: [String]
    /// The value is optional (`--watch [SECONDS]`).
    public var valueOptional: Bool
    /// The command needs it (`create --capacity SIZE`): the synopsis shows it without brackets.
    public var required: Bool

    public init(_ name: String, _ value: String?, _ summary: String, choices: [String] = [],
                valueOptional: Bool = false, required: Bool = false) {
        self.name = name
        self.required = required
        self.value = value
        self.summary = summary
        self.choices = choices
        self.valueOptional = valueOptional
    }

    /// An option without a value.
    public static func flag(_ name: String, _ summary: String) -> OptionDescription {
        OptionDescription(name, nil, summary)
    }

    /// How the synopsis shows it: `--name`, `--name VALUE`, `--name [VALUE]`, or a few choices
    /// (`--overrun wait|fail`); a long list (`--codec`'s 192 names) only completes.
    public var synopsis: String {
        guard let placeholder = value else { return name }
        let value = choices.isEmpty || choices.count > 6 ? placeholder : choices.joined(separator: "|")
        return valueOptional ? "\(name) [\(value)]" : "\(name) \(value)"
    }
}
