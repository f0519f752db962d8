import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import { isoCBOR } from '@simplewebauthn/server/helpers';

export const b64u = (b: Uint8Array | Buffer) => Buffer.from(b).toString('base64url');
const sha256 = (b: Uint8Array | string) => createHash('sha256').update(b).digest();

/**
 * A software authenticator (ES256, "none" attestation) that makes the bytes a browser's platform
 * authenticator would: enough to drive the server's real verification, right and wrong.
 */
export class SoftAuthenticator {
  readonly credentialId = randomBytes(16);
  readonly #key: KeyObject;
  readonly #publicJwk: { x: string; y: string };
  counter = 0;
  readonly rpId: string;
  readonly origin: string;

  constructor(rpId = 'console.test', origin = 'https://console.test') {
    this.rpId = rpId;
    this.origin = origin;
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    this.#key = privateKey;
    this.#publicJwk = publicKey.export({ format: 'jwk' }) as { x: string; y: string };
  }

  #authData(flags: number, attested?: Uint8Array): Buffer {
    const count = Buffer.alloc(4);
    count.writeUInt32BE(this.counter);
    return Buffer.concat([sha256(this.rpId), Buffer.from([flags]), count, ...(attested ? [attested] : [])]);
  }

  create(challenge: string, overrides: { challenge?: string } = {}): RegistrationResponseJSON {
    const cose = new Map<number, number | Uint8Array>([
      [1, 2],
      [3, -7],
      [-1, 1],
      [-2, Buffer.from(this.#publicJwk.x, 'base64url')],
      [-3, Buffer.from(this.#publicJwk.y, 'base64url')],
    ]);
    const idLen = Buffer.alloc(2);
    idLen.writeUInt16BE(this.credentialId.length);
    const attested = Buffer.concat([Buffer.alloc(16), idLen, this.credentialId, Buffer.from(isoCBOR.encode(cose))]);
    const authData = this.#authData(0x45, attested); // UP | UV | AT
    const attestationObject = isoCBOR.encode(
      new Map<string, string | Map<string, string> | Uint8Array>([
        ['fmt', 'none'],
        ['attStmt', new Map<string, string>()],
        ['authData', authData],
      ]),
    );
    const clientData = JSON.stringify({ type: 'webauthn.create', challenge: overrides.challenge ?? challenge, origin: this.origin, crossOrigin: false });
    return {
      id: b64u(this.credentialId),
      rawId: b64u(this.credentialId),
      type: 'public-key',
      clientExtensionResults: {},
      response: { clientDataJSON: b64u(Buffer.from(clientData)), attestationObject: b64u(attestationObject), transports: ['internal'] },
    };
  }

  get(challenge: string, opts: { keepCounter?: boolean } = {}): AuthenticationResponseJSON {
    if (!opts.keepCounter) this.counter += 1;
    const authData = this.#authData(0x05); // UP | UV
    const clientData = Buffer.from(JSON.stringify({ type: 'webauthn.get', challenge, origin: this.origin, crossOrigin: false }));
    const signature = sign('sha256', Buffer.concat([authData, sha256(clientData)]), this.#key);
    return {
      id: b64u(this.credentialId),
      rawId: b64u(this.credentialId),
      type: 'public-key',
      clientExtensionResults: {},
      response: { clientDataJSON: b64u(clientData), authenticatorData: b64u(authData), signature: b64u(signature) },
    };
  }
}

