#!/usr/bin/env node
// A minimal agentd client on the stock Node gRPC packages.
//
// It walks through what an editor plugin does: checks the daemon's health,
// lists its services by reflection, starts an agent, follows it to the end
// of its run over Attach, finds it in ListAgents, and shows what an error
// looks like. Each step prints one JSON line; any failure ends the program
// with status 1 and a message on stderr.
//
//   ./setup.sh
//   node client.js --socket "$AGENTD_SOCKET" --model "scripted:$(pwd)/../hello.json"
//
// The channel is grpc-js's default, as a plugin would open it: insecure
// credentials on `unix:<path>`, no options.
'use strict';

const crypto = require('node:crypto');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');

const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const health = require('grpc-health-check');

const SERVICE = 'agentd.v1.AgentService';
const TIMEOUT_MS = 10_000;
// Attach follows a whole run; a real plugin would keep it open indefinitely.
const ATTACH_TIMEOUT_MS = 120_000;
// Statuses in which the agent's run is over (WaitAgent returns on the same).
const RUN_OVER = new Set([
  'AGENT_STATUS_COMPLETED',
  'AGENT_STATUS_FAILED',
  'AGENT_STATUS_CANCELLED',
  'AGENT_STATUS_PAUSED',
  'AGENT_STATUS_INTERRUPTED',
]);

// Field names as in the proto (from_seq, not fromSeq), enums as their names.
const LOAD_OPTIONS = { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true };

// agentd's API, read from the repository's proto at run time.
const agentd = grpc.loadPackageDefinition(
  protoLoader.loadSync('agentd/v1/agentd.proto', {
    ...LOAD_OPTIONS,
    includeDirs: [path.resolve(__dirname, '../../../proto')],
  }),
).agentd.v1;

// The standard reflection service: its official proto ships inside the
// @grpc/reflection package (the server side of reflection for grpc-js).
const reflectionProtoDir = path.join(
  path.dirname(require.resolve('@grpc/reflection/package.json')),
  'build/proto',
);
const reflection = grpc.loadPackageDefinition(
  protoLoader.loadSync('grpc/reflection/v1/reflection.proto', {
    ...LOAD_OPTIONS,
    includeDirs: [reflectionProtoDir],
  }),
).grpc.reflection.v1;

// The standard health service, as grpc-health-check defines it.
const HealthClient = grpc.makeGenericClientConstructor(health.service, 'Health');

class StepFailed extends Error {}

function emit(step, fields = {}) {
  console.log(JSON.stringify({ step, ...fields }));
}

function deadline(ms = TIMEOUT_MS) {
  return { deadline: Date.now() + ms };
}

// A unary call as a promise.
function call(client, method, request) {
  return new Promise((resolve, reject) => {
    client[method](request, deadline(), (err, reply) => (err ? reject(err) : resolve(reply)));
  });
}

// Names the step in its failures, gRPC errors included.
async function step(name, run) {
  try {
    return await run();
  } catch (err) {
    if (err instanceof StepFailed) throw new StepFailed(`${name}: ${err.message}`);
    if (typeof err.code === 'number') {
      const details = err.details || '(the server gave no details)';
      throw new StepFailed(`${name}: ${grpc.status[err.code]}: ${details}`);
    }
    throw err;
  }
}

async function checkHealth(target) {
  const client = new HealthClient(target, grpc.credentials.createInsecure());
  try {
    // "" is the server as a whole.
    for (const service of ['', SERVICE]) {
      const { status } = await call(client, 'Check', { service });
      emit('health', { service, status });
      if (status !== 'SERVING') throw new StepFailed(`${service || 'the server'} is ${status}`);
    }
  } finally {
    client.close();
  }
}

async function listServices(target) {
  const client = new reflection.ServerReflection(target, grpc.credentials.createInsecure());
  try {
    const stream = client.ServerReflectionInfo(deadline());
    stream.end({ list_services: '' });
    let services;
    for await (const reply of stream) {
      if (reply.error_response) {
        const { error_code, error_message } = reply.error_response;
        throw new StepFailed(`${grpc.status[error_code]}: ${error_message}`);
      }
      services = reply.list_services_response.service.map((s) => s.name).sort();
    }
    if (!services) throw new StepFailed('the stream ended without an answer');
    emit('reflection', { services });
    if (!services.includes(SERVICE)) throw new StepFailed(`${SERVICE} is not among the services listed`);
  } finally {
    client.close();
  }
}

async function createAgent(agents, model, prompt) {
  const agent = await call(agents, 'CreateAgent', {
    prompt,
    model, // empty: the daemon's default model
    cwd: process.cwd(),
    // Nobody blocks on the run: we follow it with Attach instead.
    background: true,
  });
  emit('create', { id: agent.id, short_id: agent.short_id, status: agent.status });
  return agent.id;
}

async function followAgent(agents, id) {
  // Attach is a two-way stream, and closing our side ends it: we keep it
  // open until the run is over, then detach.
  const stream = agents.Attach(deadline(ATTACH_TIMEOUT_MS));
  stream.write({ start: { id, from_seq: 0 } });
  const texts = [];
  let final;
  for await (const event of stream) {
    if (event.event === 'entry') {
      const { seq, role, content_json } = event.entry;
      const blocks = JSON.parse(content_json.toString('utf8'));
      const text = blocks.filter((b) => b.type === 'text').map((b) => b.text).join('');
      emit('entry', { seq: Number(seq), role, text });
      if (role === 'ROLE_ASSISTANT' && text) texts.push(text);
    } else if (event.event === 'status' && !final && RUN_OVER.has(event.status.status)) {
      // The run is over; the stream is not until we detach.
      final = event.status;
      stream.end({ detach: {} });
    }
  }
  if (!final) throw new StepFailed("the stream ended before the agent's run did");
  emit('attach', { id, status: final.status, result: final.result, error: final.error, text: texts });
  if (final.status !== 'AGENT_STATUS_COMPLETED') {
    throw new StepFailed(`the agent ended ${final.status}: ${final.error || '(no error given)'}`);
  }
}

async function listAgents(agents, id) {
  const ids = (await call(agents, 'ListAgents', {})).agents.map((a) => a.id);
  emit('list', { ids });
  if (!ids.includes(id)) throw new StepFailed(`agent ${id} is not listed`);
}

async function getUnknownAgent(agents) {
  const unknown = crypto.randomUUID();
  try {
    await call(agents, 'GetAgent', { id: unknown });
  } catch (err) {
    if (typeof err.code !== 'number') throw err;
    const code = grpc.status[err.code];
    emit('get_unknown', { id: unknown, code, message: err.details });
    if (err.code !== grpc.status.NOT_FOUND) throw new StepFailed(`expected NOT_FOUND, got ${code}`);
    return;
  }
  throw new StepFailed(`GetAgent found an agent with the made-up id ${unknown}`);
}

function defaultSocket() {
  const runtime = process.env.XDG_RUNTIME_DIR;
  if (runtime) return path.join(runtime, 'agentd', 'agentd.sock');
  return `/tmp/agentd-${os.userInfo().uid}/agentd.sock`;
}

async function main() {
  const { values: args } = parseArgs({
    options: {
      // Default: $AGENTD_SOCKET, else agentd's own default.
      socket: { type: 'string', default: process.env.AGENTD_SOCKET || defaultSocket() },
      // <scheme>:<model>. Default: $AGENTD_MODEL, else the daemon's default.
      model: { type: 'string', default: process.env.AGENTD_MODEL || '' },
      prompt: { type: 'string', default: 'Say hello to the plugin author.' },
    },
  });
  const target = `unix:${args.socket}`;
  const agents = new agentd.AgentService(target, grpc.credentials.createInsecure());
  try {
    await step('health', () => checkHealth(target));
    await step('reflection', () => listServices(target));
    const id = await step('create', () => createAgent(agents, args.model, args.prompt));
    await step('attach', () => followAgent(agents, id));
    await step('list', () => listAgents(agents, id));
    await step('get_unknown', () => getUnknownAgent(agents));
  } finally {
    agents.close();
  }
  emit('done');
}

main().catch((err) => {
  console.error(`client.js: ${err instanceof StepFailed ? err.message : err.stack}`);
  process.exit(1);
});
