//! The Go signatures of Sprig v3.3.0's functions as `functions.go` maps them (`genericMap`:
//! each name to a function of strings.go, dict.go, date.go, …, or to an inline `func`),
//! for the executor's typed-argument checks (`template::params`). A function whose
//! parameters are all `interface {}` is left out: it takes anything. Helm's own functions
//! are signed in `engine::funcs`; Go's builtins in `template::funcs`.

use crate::template::params::{Param, Sig};
use Param::{Any, Bool, Cert, Float, Int, Int64Switch, List, Map, Str, Time, Uint32};

const fn fixed(fixed: &'static [Param]) -> Sig {
    Sig {
        fixed,
        variadic: None,
    }
}

const fn variadic(fixed: &'static [Param], rest: Param) -> Sig {
    Sig {
        fixed,
        variadic: Some(rest),
    }
}

const S: Sig = fixed(&[Str]);
const SS: Sig = fixed(&[Str, Str]);
const SSS: Sig = fixed(&[Str, Str, Str]);
const IS: Sig = fixed(&[Int, Str]);
const I: Sig = fixed(&[Int]);
const MS: Sig = fixed(&[Map, Str]);
const SSI: Sig = fixed(&[Str, Str, Int]);

/// Name → signature, in `functions.go`'s order.
pub const SIGNATURES: &[(&str, Sig)] = &[
    // Date functions (date.go).
    ("date", fixed(&[Str, Any])),
    ("date_in_zone", fixed(&[Str, Any, Str])),
    ("date_modify", fixed(&[Str, Time])),
    ("dateInZone", fixed(&[Str, Any, Str])),
    ("dateModify", fixed(&[Str, Time])),
    // `duration`/`durationRound` switch on `int64`: a literal integer (Go's `int`) is 0s.
    ("duration", fixed(&[Int64Switch])),
    ("durationRound", fixed(&[Int64Switch])),
    ("htmlDateInZone", fixed(&[Any, Str])),
    ("must_date_modify", fixed(&[Str, Time])),
    ("mustDateModify", fixed(&[Str, Time])),
    ("mustToDate", SS),
    ("toDate", SS),
    ("unixEpoch", fixed(&[Time])),
    // Strings (strings.go, strings.*, goutils, xstrings).
    ("abbrev", IS),
    ("abbrevboth", fixed(&[Int, Int, Str])),
    ("trunc", IS),
    ("trim", S),
    ("upper", S),
    ("lower", S),
    ("title", S),
    ("untitle", S),
    ("substr", fixed(&[Int, Int, Str])),
    ("repeat", IS),
    ("trimall", SS),
    ("trimAll", SS),
    ("trimSuffix", SS),
    ("trimPrefix", SS),
    ("nospace", S),
    ("initials", S),
    ("randAlphaNum", I),
    ("randAlpha", I),
    ("randAscii", I),
    ("randNumeric", I),
    ("swapcase", S),
    ("shuffle", S),
    ("snakecase", S),
    ("camelcase", S),
    ("kebabcase", S),
    ("wrap", IS),
    ("wrapWith", fixed(&[Int, Str, Str])),
    ("contains", SS),
    ("hasPrefix", SS),
    ("hasSuffix", SS),
    ("indent", IS),
    ("nindent", IS),
    ("replace", SSS),
    ("plural", SSI),
    ("sha1sum", S),
    ("sha256sum", S),
    ("sha512sum", S),
    ("adler32sum", S),
    ("atoi", S),
    ("seq", variadic(&[], Int)),
    ("split", SS),
    ("splitList", SS),
    ("splitn", fixed(&[Str, Int, Str])),
    ("until", I),
    ("untilStep", fixed(&[Int, Int, Int])),
    ("randInt", fixed(&[Int, Int])),
    ("round", variadic(&[Any, Int], Float)),
    ("join", fixed(&[Str, Any])),
    // Defaults (defaults.go).
    ("fromJson", S),
    ("mustFromJson", S),
    ("ternary", fixed(&[Any, Any, Bool])),
    // Reflection (reflect.go).
    ("typeIs", fixed(&[Str, Any])),
    ("typeIsLike", fixed(&[Str, Any])),
    ("kindIs", fixed(&[Str, Any])),
    // Paths (path.*).
    ("base", S),
    ("dir", S),
    ("clean", S),
    ("ext", S),
    ("isAbs", S),
    ("osBase", S),
    ("osClean", S),
    ("osDir", S),
    ("osExt", S),
    ("osIsAbs", S),
    // Encoding.
    ("b64enc", S),
    ("b64dec", S),
    ("b32enc", S),
    ("b32dec", S),
    // Data structures (dict.go, list.go).
    ("get", MS),
    ("set", fixed(&[Map, Str, Any])),
    ("unset", MS),
    ("hasKey", MS),
    ("pluck", variadic(&[Str], Map)),
    ("keys", variadic(&[], Map)),
    ("pick", variadic(&[Map], Str)),
    ("omit", variadic(&[Map], Str)),
    ("merge", variadic(&[Map], Map)),
    ("mergeOverwrite", variadic(&[Map], Map)),
    ("mustMerge", variadic(&[Map], Map)),
    ("mustMergeOverwrite", variadic(&[Map], Map)),
    ("values", fixed(&[Map])),
    ("chunk", fixed(&[Int, Any])),
    ("mustChunk", fixed(&[Int, Any])),
    // Crypto (crypto.go).
    ("bcrypt", S),
    ("htpasswd", SS),
    ("genPrivateKey", S),
    ("derivePassword", fixed(&[Uint32, Str, Str, Str, Str])),
    ("buildCustomCert", SS),
    ("genCA", fixed(&[Str, Int])),
    ("genCAWithKey", fixed(&[Str, Int, Str])),
    ("genSelfSignedCert", fixed(&[Str, List, List, Int])),
    (
        "genSelfSignedCertWithKey",
        fixed(&[Str, List, List, Int, Str]),
    ),
    ("genSignedCert", fixed(&[Str, List, List, Int, Cert])),
    (
        "genSignedCertWithKey",
        fixed(&[Str, List, List, Int, Cert, Str]),
    ),
    ("encryptAES", SS),
    ("decryptAES", SS),
    ("randBytes", I),
    // SemVer (semver.go).
    ("semver", S),
    ("semverCompare", SS),
    // Flow control.
    ("fail", S),
    // Regex (regex.go).
    ("regexMatch", SS),
    ("mustRegexMatch", SS),
    ("regexFindAll", SSI),
    ("mustRegexFindAll", SSI),
    ("regexFind", SS),
    ("mustRegexFind", SS),
    ("regexReplaceAll", SSS),
    ("mustRegexReplaceAll", SSS),
    ("regexReplaceAllLiteral", SSS),
    ("mustRegexReplaceAllLiteral", SSS),
    ("regexSplit", SSI),
    ("mustRegexSplit", SSI),
    ("regexQuoteMeta", S),
    // URLs (url.go).
    ("urlParse", S),
    ("urlJoin", fixed(&[Map])),
    // Network.
    ("getHostByName", S),
];
