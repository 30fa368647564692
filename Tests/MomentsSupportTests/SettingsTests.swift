import MomentsModel
import MomentsSupport
import Testing

/// Settings by name, and the checks that name the variable they refuse.
@Suite("Settings")
struct SettingsTests {
    @Test("A source answers by name; empty counts as unset; a copy can override or unset a value")
    func lookup() {
        var settings = Settings { name in ["PORT": "8080", "HOST": "", "LOG_LEVEL": "debug"][name] }
        #expect(settings["PORT"] == "8080" && settings["HOST"] == nil && settings["NOWHERE"] == nil)
        let original = settings
        settings["PORT"] = "9000"
        settings["LOG_LEVEL"] = nil
        #expect(settings["PORT"] == "9000" && settings["LOG_LEVEL"] == nil)
        #expect(original["PORT"] == "8080" && original["LOG_LEVEL"] == "debug", "the source is untouched")
    }

    @Test("Numbers and flags: defaults when unset; a bad value is refused with the variable's name and the value")
    func checks() throws {
        let settings: Settings = ["WORKERS": "4", "BAD": "lots", "HIGH": "99", "ON": " Yes", "OFF": "0", "MAYBE": "perhaps"]
        #expect(try Setting.integer("WORKERS", in: settings, default: 1, range: 1...8) == 4)
        #expect(try Setting.integer("UNSET", in: settings, default: 3, range: 1...8) == 3)
        #expect(try Setting.boolean("ON", in: settings, default: false) && !(try Setting.boolean("OFF", in: settings, default: true)))
        for (name, sentence) in [
            ("BAD", "BAD must be a whole number from 1 to 8, not 'lots'."), ("HIGH", "HIGH must be a whole number from 1 to 8, not '99'."),
        ] {
            #expect(throws: SettingError(sentence)) { try Setting.integer(name, in: settings, default: 1, range: 1...8) }
        }
        #expect(throws: SettingError("MAYBE must be true or false, not 'perhaps'.")) { try Setting.boolean("MAYBE", in: settings, default: true) }
    }
}
