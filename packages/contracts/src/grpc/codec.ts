import { create, fromBinary, toBinary, type DescMessage, type MessageInitShape, type MessageShape } from '@bufbuild/protobuf';

/** grpc-js wants Buffers: wrap the encoded bytes without copying them. */
export function serializer<D extends DescMessage>(schema: D) {
  return (value: MessageInitShape<D>): Buffer => {
    const bytes = toBinary(schema, create(schema, value));
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  };
}

export function deserializer<D extends DescMessage>(schema: D) {
  return (buf: Buffer): MessageShape<D> => fromBinary(schema, buf);
}
