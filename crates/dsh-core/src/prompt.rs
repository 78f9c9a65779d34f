//! The system prompt. Our own words; it changes rarely, so providers can cache it as a prefix.

use std::path::Path;

use dsh_tools::ToolRegistry;

/// The system prompt for a model working in `cwd` with `tools`.
pub fn system_prompt(model: &str, cwd: &Path, tools: &ToolRegistry) -> String {
    let mut prompt = format!(
        "You are dsh, a coding agent running on the user's machine, powered by the {model} model. \
         The working directory is {cwd}; relative paths resolve against it.\n\
         \n\
         How to work:\n\
         - Look before you change anything: read the code, tests and instructions that concern the task.\n\
         - Keep going until the task is done or you are truly blocked; do not stop to ask for \
         permission you do not need.\n\
         - Finish with a short answer: what you did, how you checked it, and what is left undone.\n\
         - Report failures as they are. Never claim that a check passed unless you ran it.",
        cwd = cwd.display()
    );
    let mut guidance = tools.guidance().peekable();
    if guidance.peek().is_some() {
        prompt.push_str("\n\nTools:");
        for line in guidance {
            prompt.push_str("\n- ");
            prompt.push_str(line);
        }
    }
    prompt
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_model_the_directory_and_each_tools_guidance() {
        let mut tools = ToolRegistry::new();
        tools.register(Box::new(dsh_tools::Read::default()));
        let prompt = system_prompt("m-1", Path::new("/w"), &tools);
        assert!(prompt.contains("powered by the m-1 model"));
        assert!(prompt.contains("The working directory is /w;"));
        assert!(prompt.contains("\n\nTools:\n- Look at files with `read`"));
    }
}
