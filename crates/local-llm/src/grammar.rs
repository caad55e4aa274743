//! Decoding constrained to a JSON Schema: a byte-level pushdown matcher
//! that says whether some text can continue a value the schema accepts, so
//! the sampler only ever picks tokens that keep the output valid and stops
//! when the value is complete.
//!
//! What is enforced: types (object, array, string, number, integer,
//! boolean, null), `properties` in their declared order with every
//! `required` one present and no others, `enum` / `const` of strings,
//! `items`, `maxItems`, `maxLength`; strings are valid JSON (escapes, UTF-8, no raw
//! control characters). A schema part it does not understand (`anyOf`,
//! `$ref`, …) accepts any JSON value there. Runs of whitespace between
//! tokens are limited, so a model cannot pad forever.
//!
//! [`JsonMatcher::forced`] says which bytes the schema leaves no choice
//! about from a point on (a key, its `": "`, the rest of an enum option,
//! closing brackets), so the decoder can run them through the model in one
//! batch rather than a pass per token.

use std::sync::Arc;

use serde_json::Value;

/// Consecutive whitespace bytes allowed between structural characters.
const MAX_WS_RUN: u8 = 2;
/// Longest number, in bytes.
const MAX_NUMBER_LEN: usize = 24;

/// A compiled schema node.
#[derive(Debug)]
pub enum Node {
    /// Any JSON value.
    Any,
    /// A string, perhaps one of fixed options, perhaps bounded.
    String {
        /// The allowed contents (JSON-escaped, without quotes).
        options: Option<Vec<Vec<u8>>>,
        /// Largest length in characters.
        max_len: Option<usize>,
    },
    /// A number (an integer when `integer`).
    Number {
        /// No fraction or exponent.
        integer: bool,
    },
    /// `true` or `false`.
    Bool,
    /// `null`.
    Null,
    /// An array of `items`, perhaps bounded.
    Array {
        /// The schema of every item.
        items: Arc<Node>,
        /// Most items allowed.
        max_items: Option<usize>,
    },
    /// An object with these properties, in order; `None` for any keys.
    Object(Option<Vec<Prop>>),
}

/// One declared property of an object.
#[derive(Debug)]
pub struct Prop {
    /// The key, JSON-escaped, without quotes.
    pub key: Vec<u8>,
    /// Its schema.
    pub node: Arc<Node>,
    /// Whether it must be present.
    pub required: bool,
}

fn escaped(s: &str) -> Vec<u8> {
    let q = serde_json::to_string(s).unwrap_or_default();
    q.as_bytes()[1..q.len().saturating_sub(1)].to_vec()
}

impl Node {
    /// Compiles a JSON Schema.
    pub fn compile(schema: &Value) -> Arc<Node> {
        Arc::new(Self::compile_inner(schema))
    }

    fn compile_inner(s: &Value) -> Node {
        let Some(obj) = s.as_object() else {
            return Node::Any;
        };
        let strings = |v: &Value| -> Option<Vec<Vec<u8>>> {
            v.as_array()?
                .iter()
                .map(|x| x.as_str().map(escaped))
                .collect::<Option<Vec<_>>>()
        };
        if let Some(c) = obj.get("const") {
            return match c.as_str() {
                Some(c) => Node::String {
                    options: Some(vec![escaped(c)]),
                    max_len: None,
                },
                None => Node::Any,
            };
        }
        if let Some(e) = obj.get("enum") {
            return match strings(e) {
                Some(options) if !options.is_empty() => Node::String {
                    options: Some(options),
                    max_len: None,
                },
                _ => Node::Any,
            };
        }
        let ty = match obj.get("type") {
            Some(Value::String(t)) => t.as_str(),
            // A list of types: taken as any value.
            _ if obj.contains_key("properties") => "object",
            _ => return Node::Any,
        };
        match ty {
            "string" => Node::String {
                options: None,
                max_len: obj
                    .get("maxLength")
                    .and_then(Value::as_u64)
                    .map(|n| n as usize),
            },
            "number" => Node::Number { integer: false },
            "integer" => Node::Number { integer: true },
            "boolean" => Node::Bool,
            "null" => Node::Null,
            "array" => Node::Array {
                items: obj
                    .get("items")
                    .map(Node::compile)
                    .unwrap_or_else(|| Arc::new(Node::Any)),
                max_items: obj
                    .get("maxItems")
                    .and_then(Value::as_u64)
                    .map(|n| n as usize),
            },
            "object" => {
                let Some(props) = obj.get("properties").and_then(Value::as_object) else {
                    return Node::Object(None);
                };
                let required: Vec<&str> = obj
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                Node::Object(Some(
                    props
                        .iter()
                        .map(|(k, v)| Prop {
                            key: escaped(k),
                            node: Node::compile(v),
                            required: required.contains(&k.as_str()),
                        })
                        .collect(),
                ))
            }
            _ => Node::Any,
        }
    }
}

#[derive(Debug, Clone)]
enum NumState {
    Start,
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    E,
    ESign,
    Exp,
}

#[derive(Debug, Clone)]
enum Frame {
    /// A value of this schema comes next.
    Value(Arc<Node>),
    /// Inside a string.
    Str {
        options: Option<Arc<Vec<Vec<u8>>>>,
        max_len: Option<usize>,
        buf: Vec<u8>,
        chars: usize,
        /// 0: none; 1: after `\`; 2..=5: hex digits of `\u` left + 1.
        escape: u8,
        /// Continuation bytes a UTF-8 character still needs.
        utf8_left: u8,
        /// For object keys: the object frame gets the key's index.
        key_of: Option<Arc<Node>>,
    },
    /// A fixed text (`true`, `null`).
    Lit { text: &'static [u8], at: usize },
    /// A number.
    Num {
        state: NumState,
        len: usize,
        integer: bool,
    },
    /// In an array: `first` right after `[`; `left` items still allowed.
    Arr {
        items: Arc<Node>,
        first: bool,
        after_value: bool,
        left: Option<usize>,
    },
    /// In an object: `next` is the first property not yet passed.
    Obj {
        node: Arc<Node>,
        next: usize,
        after_value: bool,
        first: bool,
        /// Set after a key: the colon and the value come next.
        pending: Option<Arc<Node>>,
        colon: bool,
    },
}

/// The matcher's state: cheap to clone, so candidate tokens are tried on a copy.
#[derive(Debug, Clone)]
pub struct JsonMatcher {
    stack: Vec<Frame>,
    done: bool,
    ws: u8,
}

impl JsonMatcher {
    /// A matcher for one value of `node`.
    pub fn new(node: Arc<Node>) -> Self {
        JsonMatcher {
            stack: vec![Frame::Value(node)],
            done: false,
            ws: 0,
        }
    }

    /// True once a whole value has been read.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Feeds `bytes`; false (leaving the state unspecified) when they cannot
    /// continue a valid value.
    pub fn feed(&mut self, bytes: &[u8]) -> bool {
        bytes.iter().all(|&b| self.feed_byte(b))
    }

    /// Would `bytes` be accepted? (On a copy.)
    pub fn accepts(&self, bytes: &[u8]) -> bool {
        !bytes.is_empty() && self.clone().feed(bytes)
    }

    /// How many of `bytes` a token may give: all of them when they continue
    /// the value ([`JsonMatcher::accepts`]), or the first `n` when those
    /// complete it and the rest comes after it. A model closes a tool call
    /// with tokens such as `"}}` or `"}\n` (the arguments, then the call's
    /// own braces or a new line); refusing them would leave it nothing but
    /// worse tokens, and some models then never close the value at all.
    /// `None` when the token cannot be taken.
    pub fn usable_prefix(&self, bytes: &[u8]) -> Option<usize> {
        if bytes.is_empty() {
            return None;
        }
        let mut m = self.clone();
        for (i, &b) in bytes.iter().enumerate() {
            if m.done {
                return Some(i);
            }
            if !m.feed_byte(b) {
                // A number ends at the first byte that is not part of it.
                return m.done.then_some(i);
            }
        }
        Some(bytes.len())
    }

    /// The shortest text (near enough: required properties only, the
    /// shortest option, `0` for a number) that completes the value from
    /// here. Decoding with a budget keeps this within the tokens left, so
    /// a forced call always closes: every byte of it is a token of a
    /// byte-level vocabulary.
    pub fn closing(&self) -> Vec<u8> {
        let mut out = Vec::new();
        // A key being written: the property it names, for the object below.
        let mut key: Option<Vec<u8>> = None;
        for frame in self.stack.iter().rev() {
            match frame {
                Frame::Value(node) => min_value(node, &mut out),
                Frame::Lit { text, at } => out.extend_from_slice(text.get(*at..).unwrap_or(&[])),
                Frame::Num { state, .. } => {
                    if matches!(
                        state,
                        NumState::Start
                            | NumState::Minus
                            | NumState::Dot
                            | NumState::E
                            | NumState::ESign
                    ) {
                        out.push(b'0');
                    }
                }
                Frame::Str {
                    options,
                    buf,
                    escape,
                    utf8_left,
                    key_of,
                    ..
                } => {
                    let mut text = buf.clone();
                    match *escape {
                        0 => {}
                        1 => text.push(b'n'),
                        n => text.extend(std::iter::repeat_n(b'0', usize::from(n - 1))),
                    }
                    if *utf8_left > 0 {
                        // A continuation that makes a valid character for
                        // the lead byte (no overlong forms or surrogates).
                        let lead = buf.iter().rev().find(|b| **b >= 0xC0).copied().unwrap_or(0);
                        let first = match lead {
                            0xE0 => 0xA0,
                            0xF0 => 0x90,
                            _ => 0x80,
                        };
                        let started = buf
                            .iter()
                            .rev()
                            .take_while(|b| (0x80..0xC0).contains(*b))
                            .count();
                        for i in 0..usize::from(*utf8_left) {
                            text.push(if started == 0 && i == 0 { first } else { 0x80 });
                        }
                    }
                    if let Some(opts) = options {
                        if let Some(o) = opts
                            .iter()
                            .filter(|o| o.starts_with(buf))
                            .min_by_key(|o| o.len())
                        {
                            text = o.clone();
                        }
                    }
                    out.extend_from_slice(text.get(buf.len()..).unwrap_or(&[]));
                    out.push(b'"');
                    if key_of.is_some() {
                        key = Some(text);
                    }
                }
                Frame::Arr { .. } => out.push(b']'),
                Frame::Obj {
                    node,
                    next,
                    after_value,
                    first,
                    pending,
                    ..
                } => {
                    let props = match &**node {
                        Node::Object(Some(p)) => Some(p.as_slice()),
                        _ => None,
                    };
                    let mut next = *next;
                    let mut after_value = *after_value;
                    let mut first = *first;
                    let mut value = pending.clone();
                    if let Some(k) = key.take() {
                        // The key above closes: its value follows.
                        match props.and_then(|p| {
                            p.get(next..)?
                                .iter()
                                .position(|q| q.key == k)
                                .map(|i| (p, i))
                        }) {
                            Some((p, i)) => {
                                value = p.get(next + i).map(|q| q.node.clone());
                                next += i + 1;
                            }
                            None => value = Some(Arc::new(Node::Any)),
                        }
                    }
                    if let Some(v) = value {
                        out.push(b':');
                        min_value(&v, &mut out);
                        after_value = true;
                        first = false;
                    }
                    let rest = props.map(|p| p.get(next..).unwrap_or(&[])).unwrap_or(&[]);
                    let mut needed: Vec<&Prop> = rest.iter().filter(|q| q.required).collect();
                    if needed.is_empty() && !first && !after_value {
                        // After a comma a key must come.
                        needed.extend(rest.first());
                    }
                    for q in needed {
                        if after_value {
                            out.push(b',');
                        }
                        min_prop(q, &mut out);
                        after_value = true;
                    }
                    out.push(b'}');
                }
            }
        }
        out
    }

    /// The bytes the schema forces from here: as long as only one byte
    /// can come next (the rest of a key, `:` after it, `,` before a
    /// required property, the rest of an enum option once one fits, a
    /// `}` or `]` that nothing else may take the place of), those bytes;
    /// empty at a choice. Whitespace the matcher would allow is not a
    /// choice here: the run is laid out as Python's `json.dumps` writes
    /// JSON (and the call's own opening is written), a space after `:` and
    /// `,` and nowhere else, and that space is only part of the run when
    /// the byte after it is forced too, so a free value after `: ` is
    /// still written by the model with whatever space its tokens carry.
    ///
    /// The run stops right after the opening quote of a string value: its
    /// content starts a new token, so a caller that tokenizes the run
    /// leaves the model's next token (or the next run, for an enum option
    /// that is already settled) to start the content, as it would.
    pub fn forced(&self) -> Vec<u8> {
        let mut m = self.clone();
        let mut out = Vec::new();
        while !m.done {
            let Some(b) = m.only_byte() else {
                break;
            };
            if m.ws == 0 && m.spaced_here() && m.feed_byte(b' ') {
                out.push(b' ');
            }
            let opens_value = matches!(m.stack.last(), Some(Frame::Value(_))) && b == b'"';
            if !m.feed_byte(b) {
                break;
            }
            out.push(b);
            if opens_value {
                break;
            }
        }
        out
    }

    /// The one byte other than layout whitespace that may come next, if
    /// there is exactly one.
    fn only_byte(&self) -> Option<u8> {
        // Inside a string a space is content, not layout.
        let in_string = matches!(self.stack.last(), Some(Frame::Str { .. }));
        let mut found = None;
        for b in 0..=u8::MAX {
            if !in_string && matches!(b, b' ' | b'\n' | b'\t' | b'\r') {
                continue;
            }
            if self.clone().feed_byte(b) {
                if found.is_some() {
                    return None;
                }
                found = Some(b);
            }
        }
        found
    }

    /// Right after a `:` or a `,` (where `json.dumps` puts a space).
    fn spaced_here(&self) -> bool {
        match self.stack.last() {
            // A value after a key's colon or an array's comma; the
            // outermost value has nothing before it.
            Some(Frame::Value(_)) => self.stack.len() > 1,
            Some(Frame::Obj {
                first,
                after_value,
                pending,
                ..
            }) => !*first && !*after_value && pending.is_none(),
            _ => false,
        }
    }

    fn whitespace(&mut self, b: u8) -> bool {
        if matches!(b, b' ' | b'\n' | b'\t' | b'\r') && self.ws < MAX_WS_RUN {
            self.ws += 1;
            true
        } else {
            false
        }
    }

    fn feed_byte(&mut self, b: u8) -> bool {
        if self.done {
            return false;
        }
        loop {
            let Some(top) = self.stack.pop() else {
                return false;
            };
            match self.step(top, b) {
                Step::Consumed => {
                    if !matches!(b, b' ' | b'\n' | b'\t' | b'\r') {
                        self.ws = 0;
                    }
                    if self.stack.is_empty() {
                        self.done = true;
                    }
                    return true;
                }
                Step::Reject => return false,
                // The frame ended without taking `b`: offer it to the parent.
                Step::Finished => {
                    if self.stack.is_empty() {
                        self.done = true;
                        return false;
                    }
                }
            }
        }
    }

    /// Handles `b` with `frame` popped: pushes back what remains.
    fn step(&mut self, frame: Frame, b: u8) -> Step {
        match frame {
            Frame::Value(node) => self.start_value(node, b),
            Frame::Lit { text, at } => {
                if text.get(at) == Some(&b) {
                    if at + 1 < text.len() {
                        self.stack.push(Frame::Lit { text, at: at + 1 });
                    }
                    Step::Consumed
                } else {
                    Step::Reject
                }
            }
            Frame::Num {
                state,
                len,
                integer,
            } => self.number(state, len, integer, b),
            Frame::Str {
                options,
                max_len,
                mut buf,
                mut chars,
                escape,
                utf8_left,
                key_of,
            } => {
                let keep = |buf: Vec<u8>, chars, escape, utf8_left, this: &mut Self| {
                    this.stack.push(Frame::Str {
                        options: options.clone(),
                        max_len,
                        buf,
                        chars,
                        escape,
                        utf8_left,
                        key_of: key_of.clone(),
                    });
                    Step::Consumed
                };
                if utf8_left > 0 {
                    if !(0x80..=0xBF).contains(&b) {
                        return Step::Reject;
                    }
                    buf.push(b);
                    if !prefix_ok(&options, &buf) {
                        return Step::Reject;
                    }
                    return keep(buf, chars, 0, utf8_left - 1, self);
                }
                if escape == 1 {
                    let next = match b {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => 0,
                        b'u' => 5,
                        _ => return Step::Reject,
                    };
                    buf.push(b);
                    if !prefix_ok(&options, &buf) {
                        return Step::Reject;
                    }
                    return keep(buf, chars, next, 0, self);
                }
                if escape >= 2 {
                    if !b.is_ascii_hexdigit() {
                        return Step::Reject;
                    }
                    buf.push(b);
                    if !prefix_ok(&options, &buf) {
                        return Step::Reject;
                    }
                    let next = if escape == 2 { 0 } else { escape - 1 };
                    return keep(buf, chars, next, 0, self);
                }
                if b == b'"' {
                    if let Some(opts) = &options {
                        if !opts.contains(&buf) {
                            return Step::Reject;
                        }
                    }
                    if let Some(obj) = key_of {
                        return self.key_closed(obj, &buf);
                    }
                    return Step::Consumed;
                }
                if b < 0x20 {
                    return Step::Reject;
                }
                if max_len.is_some_and(|m| chars >= m) {
                    return Step::Reject;
                }
                let (esc, left) = match b {
                    b'\\' => (1, 0),
                    0x00..=0x7F => (0, 0),
                    0xC2..=0xDF => (0, 1),
                    0xE0..=0xEF => (0, 2),
                    0xF0..=0xF4 => (0, 3),
                    _ => return Step::Reject,
                };
                buf.push(b);
                if !prefix_ok(&options, &buf) {
                    return Step::Reject;
                }
                chars += 1;
                keep(buf, chars, esc, left, self)
            }
            Frame::Arr {
                items,
                first,
                after_value,
                left,
            } => {
                if self.whitespace(b) {
                    self.stack.push(Frame::Arr {
                        items,
                        first,
                        after_value,
                        left,
                    });
                    return Step::Consumed;
                }
                // A bounded array closes once its last allowed item is in.
                let room = left.is_none_or(|n| n > 0);
                let next_left = left.map(|n| n.saturating_sub(1));
                match b {
                    b']' if first || after_value => Step::Consumed,
                    b',' if after_value && room => {
                        // The value pushed above comes back here with `after_value`.
                        self.stack.push(Frame::Arr {
                            items: items.clone(),
                            first: false,
                            after_value: true,
                            left: next_left,
                        });
                        self.stack.push(Frame::Value(items));
                        Step::Consumed
                    }
                    _ if first && room => {
                        self.stack.push(Frame::Arr {
                            items: items.clone(),
                            first: false,
                            after_value: true,
                            left: next_left,
                        });
                        self.start_value(items, b)
                    }
                    _ => Step::Reject,
                }
            }
            Frame::Obj {
                node,
                next,
                after_value,
                first,
                pending,
                colon,
            } => {
                if self.whitespace(b) {
                    self.stack.push(Frame::Obj {
                        node,
                        next,
                        after_value,
                        first,
                        pending,
                        colon,
                    });
                    return Step::Consumed;
                }
                if let Some(value) = pending {
                    if !colon {
                        return Step::Reject;
                    }
                    if b != b':' {
                        return Step::Reject;
                    }
                    self.stack.push(Frame::Obj {
                        node,
                        next,
                        after_value: true,
                        first: false,
                        pending: None,
                        colon: false,
                    });
                    self.stack.push(Frame::Value(value));
                    return Step::Consumed;
                }
                let props = match &*node {
                    Node::Object(p) => p.as_deref(),
                    _ => None,
                };
                let may_close =
                    props.is_none_or(|p| p[next.min(p.len())..].iter().all(|q| !q.required));
                let keys_left = props.is_none_or(|p| next < p.len());
                match b {
                    b'}' if (first || after_value) && may_close => Step::Consumed,
                    b',' if after_value && keys_left => {
                        self.stack.push(Frame::Obj {
                            node,
                            next,
                            after_value: false,
                            first: false,
                            pending: None,
                            colon: false,
                        });
                        Step::Consumed
                    }
                    b'"' if (first || !after_value) && keys_left => {
                        let options = props.map(|p| {
                            let mut allowed = Vec::new();
                            for q in &p[next..] {
                                allowed.push(q.key.clone());
                                if q.required {
                                    break;
                                }
                            }
                            Arc::new(allowed)
                        });
                        self.stack.push(Frame::Obj {
                            node: node.clone(),
                            next,
                            after_value: false,
                            first: false,
                            pending: None,
                            colon: false,
                        });
                        self.stack.push(Frame::Str {
                            options,
                            max_len: None,
                            buf: Vec::new(),
                            chars: 0,
                            escape: 0,
                            utf8_left: 0,
                            key_of: Some(node),
                        });
                        Step::Consumed
                    }
                    _ => Step::Reject,
                }
            }
        }
    }

    /// A key's closing quote: the object frame (below) learns which
    /// property comes and waits for the colon.
    fn key_closed(&mut self, _obj: Arc<Node>, key: &[u8]) -> Step {
        let Some(Frame::Obj { node, next, .. }) = self.stack.pop() else {
            return Step::Reject;
        };
        let (value, next) = match &*node {
            Node::Object(Some(props)) => match props[next..].iter().position(|p| p.key == key) {
                Some(i) => (props[next + i].node.clone(), next + i + 1),
                None => return Step::Reject,
            },
            _ => (Arc::new(Node::Any), next),
        };
        self.stack.push(Frame::Obj {
            node,
            next,
            after_value: false,
            first: false,
            pending: Some(value),
            colon: true,
        });
        Step::Consumed
    }

    fn start_value(&mut self, node: Arc<Node>, b: u8) -> Step {
        if self.whitespace(b) {
            self.stack.push(Frame::Value(node));
            return Step::Consumed;
        }
        let string = |this: &mut Self, options: Option<Vec<Vec<u8>>>, max_len| {
            this.stack.push(Frame::Str {
                options: options.map(Arc::new),
                max_len,
                buf: Vec::new(),
                chars: 0,
                escape: 0,
                utf8_left: 0,
                key_of: None,
            });
            Step::Consumed
        };
        let lit = |this: &mut Self, text: &'static [u8]| {
            this.stack.push(Frame::Lit { text, at: 1 });
            Step::Consumed
        };
        match (&*node, b) {
            (Node::String { options, max_len }, b'"') => string(self, options.clone(), *max_len),
            (Node::Any, b'"') => string(self, None, None),
            (Node::Bool | Node::Any, b't') => lit(self, b"true"),
            (Node::Bool | Node::Any, b'f') => lit(self, b"false"),
            (Node::Null | Node::Any, b'n') => lit(self, b"null"),
            (Node::Number { integer }, b'-' | b'0'..=b'9') => {
                self.number(NumState::Start, 0, *integer, b)
            }
            (Node::Any, b'-' | b'0'..=b'9') => self.number(NumState::Start, 0, false, b),
            (Node::Array { items, max_items }, b'[') => {
                self.stack.push(Frame::Arr {
                    items: items.clone(),
                    first: true,
                    after_value: false,
                    left: *max_items,
                });
                Step::Consumed
            }
            (Node::Any, b'[') => {
                self.stack.push(Frame::Arr {
                    items: Arc::new(Node::Any),
                    first: true,
                    after_value: false,
                    left: None,
                });
                Step::Consumed
            }
            (Node::Object(_), b'{') => {
                self.stack.push(Frame::Obj {
                    node,
                    next: 0,
                    after_value: false,
                    first: true,
                    pending: None,
                    colon: false,
                });
                Step::Consumed
            }
            (Node::Any, b'{') => {
                self.stack.push(Frame::Obj {
                    node: Arc::new(Node::Object(None)),
                    next: 0,
                    after_value: false,
                    first: true,
                    pending: None,
                    colon: false,
                });
                Step::Consumed
            }
            _ => Step::Reject,
        }
    }

    fn number(&mut self, state: NumState, len: usize, integer: bool, b: u8) -> Step {
        use NumState::*;
        let digit = b.is_ascii_digit();
        let next = match (&state, b) {
            (Start, b'-') => Some(Minus),
            (Start | Minus, b'0') => Some(Zero),
            (Start | Minus, _) if digit => Some(Int),
            (Int, _) if digit => Some(Int),
            (Zero | Int, b'.') if !integer => Some(Dot),
            (Dot | Frac, _) if digit => Some(Frac),
            (Zero | Int | Frac, b'e' | b'E') if !integer => Some(E),
            (E, b'+' | b'-') => Some(ESign),
            (E | ESign | Exp, _) if digit => Some(Exp),
            _ => None,
        };
        match next {
            Some(s) if len < MAX_NUMBER_LEN => {
                self.stack.push(Frame::Num {
                    state: s,
                    len: len + 1,
                    integer,
                });
                Step::Consumed
            }
            Some(_) => Step::Reject,
            None if matches!(state, Zero | Int | Frac | Exp) => Step::Finished,
            None => Step::Reject,
        }
    }
}

enum Step {
    Consumed,
    Reject,
    Finished,
}

/// The shortest value of `node` (see [`JsonMatcher::closing`]).
fn min_value(node: &Node, out: &mut Vec<u8>) {
    match node {
        Node::Any | Node::Number { .. } => out.push(b'0'),
        Node::String { options, .. } => {
            out.push(b'"');
            if let Some(o) = options
                .as_ref()
                .and_then(|o| o.iter().min_by_key(|o| o.len()))
            {
                out.extend_from_slice(o);
            }
            out.push(b'"');
        }
        Node::Bool => out.extend_from_slice(b"true"),
        Node::Null => out.extend_from_slice(b"null"),
        Node::Array { .. } => out.extend_from_slice(b"[]"),
        Node::Object(props) => {
            out.push(b'{');
            let mut first = true;
            for q in props.iter().flatten().filter(|q| q.required) {
                if !first {
                    out.push(b',');
                }
                min_prop(q, out);
                first = false;
            }
            out.push(b'}');
        }
    }
}

fn min_prop(q: &Prop, out: &mut Vec<u8>) {
    out.push(b'"');
    out.extend_from_slice(&q.key);
    out.extend_from_slice(b"\":");
    min_value(&q.node, out);
}

fn prefix_ok(options: &Option<Arc<Vec<Vec<u8>>>>, buf: &[u8]) -> bool {
    options
        .as_ref()
        .is_none_or(|o| o.iter().any(|opt| opt.starts_with(buf)))
}

#[cfg(test)]
#[path = "grammar_tests.rs"]
mod tests;
