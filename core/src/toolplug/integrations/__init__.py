"""toolplug where agents run: the installed tools in each framework's own terms.

One module per framework, each installed with an extra and imported only when used, so
``import toolplug`` never pulls a framework in:

- ``toolplug.integrations.pydantic_ai``: ``ToolplugToolset``, a pydantic-ai toolset
  (``pip install "toolplug[pydantic-ai]"``);
- ``toolplug.integrations.openai_agents``: ``function_tools`` and ``instructions`` for the
  OpenAI Agents SDK (``pip install "toolplug[openai-agents]"``);
- ``toolplug.integrations.langchain``: ``ToolplugToolkit`` and ``system_prompt`` for
  LangChain and LangGraph (``pip install "toolplug[langchain]"``);
- ``toolplug.integrations.llm``: the ``Toolplug`` toolbox of the llm command and library
  (``pip install "toolplug[llm]"``).

Nothing is imported here: import the module of your framework.
"""
