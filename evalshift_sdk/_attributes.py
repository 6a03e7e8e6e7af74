"""Span names and attribute keys shared by the SDK writer and the core reader.

GenAI semantic-convention names where they exist; what they lack lives under ``evalshift.*``.
"""

OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_ID = "gen_ai.response.id"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
TOOL_DEFINITIONS = "gen_ai.tool.definitions"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT = "gen_ai.tool.call.result"
AGENT_NAME = "gen_ai.agent.name"
ERROR_TYPE = "error.type"

TOOLSET_REF = "evalshift.toolset_ref"
REQUESTED_TOOL_CALLS = "evalshift.requested_tool_calls"
GENERATION_CONFIG = "evalshift.generation_config"
REFUSAL = "evalshift.refusal"
OUTPUT_TEXT = "evalshift.output_text"
PROMPT_ID = "evalshift.prompt_id"
INPUTS = "evalshift.inputs"
TAGS = "evalshift.tags"
TOOL_ERROR = "evalshift.tool.error"
TOOL_FAILED = "evalshift.tool.failed"
STREAMED = "evalshift.streamed"
# The host stopped reading a stream before its end (closed, broken out of, or dropped).
STREAM_INCOMPLETE = "evalshift.stream_incomplete"
LATENCY_MS = "evalshift.latency_ms"
IMPLICIT_TURN = "evalshift.implicit_turn"
# Never exported: a model call's pending conversions, resolved into the attributes above on
# the export thread (see ``instrumentation._genai.Deferred``).
DEFERRED = "evalshift.internal.deferred"

OP_CHAT = "chat"
OP_EXECUTE_TOOL = "execute_tool"
OP_INVOKE_AGENT = "invoke_agent"

SCOPE_NAME = "evalshift_sdk"
