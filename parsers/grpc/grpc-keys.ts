// grpc-keys.ts — key paths ("id", "ids[]", "user.id", "items[].key"): checking one against a request
// message type, and taking the keys it names out of a decoded message.
import protobuf from 'protobufjs';
import { GrpcConfigError } from './grpc-config.js';

/** Field types a key may have: bytes as they are, strings as UTF-8, integers as decimal digits. */
const KEY_TYPES = new Set([
  'bytes', 'string',
  'int32', 'uint32', 'sint32', 'fixed32', 'sfixed32',
  'int64', 'uint64', 'sint64', 'fixed64', 'sfixed64',
]);

/** One field on the way to a key. */
interface KeyStep {
  name: string;
  repeated: boolean;
  /** Only the last step: whether an absent value means "no key" (explicit presence: proto2
   *  optional, proto3 `optional`, oneof members) rather than the field's default value. */
  hasPresence: boolean;
}

/** A key path checked against a message type. */
export interface KeyPath {
  readonly text: string;
  readonly steps: readonly KeyStep[];
  /** How the last field's value becomes key bytes. */
  readonly kind: 'bytes' | 'string' | 'integer';
}

/** Checks `text` against `type` and compiles it; throws GrpcConfigError naming `where`, the path
 *  and the field at fault. */
export function compileKeyPath(type: protobuf.Type, text: string, where: string): KeyPath {
  const fail = (why: string): never => {
    throw new GrpcConfigError(`${where}: key path "${text}": ${why}`);
  };
  const steps: KeyStep[] = [];
  let current: protobuf.Type = type;
  const segments = text.split('.');
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i] ?? '';
    const marked = segment.endsWith('[]');
    const name = marked ? segment.slice(0, -2) : segment;
    // Own properties only: a name like "constructor" must not find Object's.
    const field = Object.prototype.hasOwnProperty.call(current.fields, name) ? current.fields[name] : undefined;
    if (!field) {
      const known = Object.keys(current.fields).join(', ') || 'none';
      return fail(`${current.fullName.replace(/^\./, '')} has no field "${name}" (fields: ${known})`);
    }
    if (field.map) fail(`field "${name}" is a map; map fields cannot hold keys`);
    if (marked && !field.repeated) fail(`field "${name}" is not repeated; drop the "[]"`);
    if (!marked && field.repeated) fail(`field "${name}" is repeated; write "${name}[]" to take every element`);
    field.resolve();
    const last = i === segments.length - 1;
    const resolved = field.resolvedType;
    if (!last) {
      if (!(resolved instanceof protobuf.Type)) fail(`field "${name}" is a ${field.type}, not a message, so "." cannot follow it`);
      current = resolved as protobuf.Type;
      steps.push({ name, repeated: marked, hasPresence: true });
      continue;
    }
    if (resolved !== null || !KEY_TYPES.has(field.type)) {
      fail(`field "${name}" is a ${field.type}; a key must be bytes, a string or an integer`);
    }
    steps.push({ name, repeated: marked, hasPresence: field.hasPresence });
    const kind = field.type === 'bytes' ? 'bytes' : field.type === 'string' ? 'string' : 'integer';
    return { text, steps, kind };
  }
  // split() gives at least one segment, and the last one returns above.
  return fail('empty');
}

const utf8 = new TextEncoder();

/** Appends the keys `path` names in `message` (as protobufjs decoded it) to `out`, in field order.
 *  Keys that are empty or longer than `maxKeyBytes` are left out: no record can hold them. */
export function extractKeys(message: object, path: KeyPath, maxKeyBytes: number, out: Uint8Array[]): void {
  walk(message, 0);

  function walk(node: object, depth: number): void {
    const step = path.steps[depth];
    if (!step) return;
    const fields = node as Record<string, unknown>;
    const isLast = depth === path.steps.length - 1;
    // protobufjs keeps defaults on the prototype and sets own properties only for fields on the wire.
    if (isLast && !step.repeated && step.hasPresence && !Object.prototype.hasOwnProperty.call(node, step.name)) return;
    const value = fields[step.name];
    const values = step.repeated ? (Array.isArray(value) ? (value as unknown[]) : []) : [value];
    for (const item of values) {
      if (isLast) {
        const key = keyBytes(item, path.kind);
        if (key && key.length > 0 && key.length <= maxKeyBytes) out.push(key);
      } else if (typeof item === 'object' && item !== null) {
        walk(item, depth + 1);
      }
    }
  }
}

/** A key's bytes from a decoded scalar; null for a value of an unexpected shape. */
function keyBytes(value: unknown, kind: KeyPath['kind']): Uint8Array | null {
  if (kind === 'bytes') return value instanceof Uint8Array ? new Uint8Array(value) : null;
  if (kind === 'string') return typeof value === 'string' ? utf8.encode(value) : null;
  // 32-bit integers decode to numbers; 64-bit ones to Long objects (exact, signed or not), whose
  // toString() gives the decimal digits.
  if (typeof value === 'number') return Number.isInteger(value) ? utf8.encode(String(value)) : null;
  if (typeof value === 'object' && value !== null && isLong(value)) return utf8.encode(value.toString());
  return null;
}

function isLong(value: object): value is { toString(): string } {
  return 'low' in value && 'high' in value && 'unsigned' in value;
}
