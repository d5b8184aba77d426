import DiffStreamJSON
import Testing

struct JSONModelTests {
    @Test(arguments: [
        ("1", "1"), ("-0", "0"), ("0.000", "0"), ("-0e5", "0"), ("1.0", "1"), ("1.00", "1"), ("10", "10"),
        ("1e2", "100"), ("1E+2", "100"), ("100e-2", "1"), ("1.5", "1.5"), ("-1.50", "-1.5"), ("0.1", "0.1"),
        ("0.000001", "0.000001"), ("0.0000001", "1e-7"), ("1.23e-7", "1.23e-7"), ("123e-9", "1.23e-7"),
        ("12345678901234567890", "12345678901234567890"), ("123456789012345678901", "123456789012345678901"),
        ("1234567890123456789012", "1.234567890123456789012e+21"), ("1e21", "1e+21"), ("1e20", "100000000000000000000"),
        ("1e400", "1e+400"), ("-1e-400", "-1e-400"), ("9007199254740993", "9007199254740993"),
        ("0.5e1", "5"), ("25e-1", "2.5"), ("1e0", "1"), ("1e-0", "1"), ("1e-6", "0.000001"), ("12e-7", "0.0000012"),
        ("1e99999999999999999999", "1e+99999999999999999999"), ("12.5e99999999999999999999", "1.25e+100000000000000000000"),
        ("1e-99999999999999999999", "1e-99999999999999999999"), ("0.01e-99999999999999999999", "1e-100000000000000000001"),
        ("1000e-99999999999999999999", "1e-99999999999999999996"), ("0e99999999999999999999", "0"),
        ("1e000000000000000000000000002", "100"),
    ])
    func numbersHaveOneSpelling(input: String, canonical: String) throws {
        #expect(try JSONModel(parsing: input).description == canonical)
    }
}

extension JSONModelTests {
    @Test(arguments: [
        ("1", "1.0", true), ("1", "1.00", true), ("100", "1e2", true), ("0.1", "1e-1", true), ("-0", "0", true),
        ("9007199254740993", "9007199254740992", false), ("12345678901234567890", "12345678901234567891", false),
        ("0.30000000000000004", "0.3", false), ("1e400", "10e399", true), ("1e400", "1e401", false),
        ("{\"a\":1,\"b\":2}", "{\"b\":2,\"a\":1}", true), ("{\"a\":1}", "{\"a\":1.0}", true), ("{\"a\":1}", "{\"A\":1}", false),
        ("[1,2]", "[2,1]", false), ("\"\\u00e9\"", "\"é\"", true), ("\"\u{E9}\"", "\"e\u{301}\"", false), ("\"\\/\"", "\"/\"", true),
        ("null", "false", false), ("\"1\"", "1", false), ("{\"a\":{\"y\":1,\"x\":[{\"q\":1,\"p\":2}]}}", "{\"a\":{\"x\":[{\"p\":2,\"q\":1}],\"y\":1}}", true),
    ] as [(String, String, Bool)])
    func equalityIsJSONValueEquality(lhs: String, rhs: String, equal: Bool) throws {
        let left = try JSONModel(parsing: lhs)
        let right = try JSONModel(parsing: rhs)
        #expect((left == right) == equal)
        if equal { #expect(left.hashValue == right.hashValue && left.description == right.description) }
    }

    @Test(arguments: [
        ("\"a\\u0000b\"", "\"a\\u0000b\""), ("\"\\u001F\"", "\"\\u001f\""), ("\"\\u0008\\u000C\\u000A\\u000D\\u0009\"", "\"\\b\\f\\n\\r\\t\""),
        ("\"\\/\"", "\"/\""), ("\"\\u0041\"", "\"A\""), ("\"\\u2028\"", "\"\u{2028}\""), ("\"\\ud83d\\ude00\"", "\"😀\""),
        ("\"\\u007f\"", "\"\u{7F}\""), ("\"\\\"\\\\\"", "\"\\\"\\\\\""),
        ("{ \"b\" : 1 , \"a\" : [ true , null ] }", "{\"a\":[true,null],\"b\":1}"), ("{\"b\":1,\"a\":2,\"\":3}", "{\"\":3,\"a\":2,\"b\":1}"),
        ("{\"ab\":1,\"a\":2,\"a \":3}", "{\"a\":2,\"a \":3,\"ab\":1}"), ("{\"é\":1,\"z\":2}", "{\"z\":2,\"é\":1}"),
    ])
    func canonicalForm(input: String, canonical: String) throws {
        #expect(try JSONModel(parsing: input).description == canonical)
    }

    @Test func modelsFromValuesMatchModelsFromText() throws {
        let value: JSONValue = ["title": "Hi", "n": 42, "x": 0.1, "list": [true, nil, "é"], "big": 1e21]
        #expect(JSONModel(value) == (try JSONModel(parsing: #"{"big":1e21,"list":[true,null,"é"],"n":42.0,"title":"Hi","x":0.1}"#)))
        #expect(JSONModel(value).description == #"{"big":1e+21,"list":[true,null,"é"],"n":42,"title":"Hi","x":0.1}"#)
        #expect(JSONModel() == JSONModel(.null) && JSONModel().isNull && JSONModel().description == "null")
    }

    @Test func theValueViewIsLossyOnlyForNumbers() throws {
        let model = try JSONModel(parsing: #"{"a":[1,"x"],"big":1e400,"exact":9007199254740993}"#)
        #expect(model["a"] == [1, "x"])
        #expect(model["big"] == .number(.infinity))
        #expect(model["exact"] == .number(9007199254740992))  // the nearest Double
        #expect(model.description.contains("9007199254740993"))
    }

    @Test func theCanonicalFormIsAFixedPoint() throws {
        let model = try JSONModel(parsing: #"{"z":[1.50,2E3,{"b":"\u00e9","a":-0.0}],"a":"\/"}"#)
        #expect(try JSONModel(parsing: Array(model.bytes)).bytes.elementsEqual(model.bytes))
        #expect(model.description == #"{"a":"/","z":[1.5,2000,{"a":0,"b":"é"}]}"#)
    }
}
